"""The ALBERT encoder (Lan et al. 2019) as a Keras functional model."""

import keras

from zoo.models.bert_encoder import BertEncoder


@keras.saving.register_keras_serializable(package="zoo")
class AlbertEncoder(BertEncoder):
    """ALBERT: BERT with a factorised embedding and cross-layer sharing.

    Token, position and segment tables are `embedding_dim` (E) wide; their
    LayerNorm'd sum is projected to `hidden_dim` (H) by one dense layer
    (`embedding_projection`), so the vocabulary costs V x E + E x H instead
    of V x H. The `num_layers` transformer layers use `num_groups` distinct
    blocks: layer i runs block `i // (num_layers // num_groups)` (ALBERT's
    released models use one block for all layers). Blocks are the same
    post-LN `TransformerEncoderBlock` as BERT's; `activation="gelu_tanh"`
    is the tanh-approximate GELU ALBERT v2 was trained with.

    Takes `BertEncoder`'s arguments plus `embedding_dim` and `num_groups`;
    the defaults are ALBERT v2's (`zoo.configs.FAMILY_DEFAULTS["albert"]`:
    E = 128, one block, no dropout, tanh-approximate GELU).

    Same call contract as `BertEncoder`: inputs `token_ids`, `segment_ids`,
    `padding_mask` (int32 `[batch, seq]`); outputs `sequence_output`
    `[batch, seq, hidden_dim]` and `pooled_output` `[batch, hidden_dim]`
    (tanh dense on [CLS]). `with_internals()` adds `hidden_states` (the
    projected embedding output, then each of the `num_layers` layers'
    outputs, all H wide) and `attention_probs` (one per layer).

    `transformer_layers[i]` is the block layer i runs (`num_layers` entries,
    shared blocks repeated); `blocks` lists the `num_groups` distinct ones.

    Example:
        >>> encoder = zoo.BertEncoder.from_preset("albert_base")  # an AlbertEncoder
        >>> encoder.count_params()
        11683584
    """

    _family = "albert"

    def _create_embeddings(self, config, dtype):
        """`embeddings` (E wide), then `embedding_projection` (E -> H)."""
        super()._create_embeddings(config, dtype)
        self.embedding_projection = keras.layers.Dense(
            config.hidden_dim,
            kernel_initializer=keras.initializers.TruncatedNormal(
                stddev=config.initializer_range
            ),
            dtype=dtype,
            name="embedding_projection",
        )

    def _create_blocks(self, config, dtype):
        """The `num_groups` distinct `blocks` the layers share."""
        self.blocks = self._new_blocks(config, dtype, "shared_layer")

    def _embed(self, inputs):
        x = super()._embed(inputs)
        return self.embedding_projection(x)  # (B, T, E) -> (B, T, H)

    def _layer_sequence(self, config):
        """Layer i runs block `i // (num_layers // num_groups)`."""
        per_group = config.num_layers // config.num_groups
        return [self.blocks[i // per_group] for i in range(config.num_layers)]

    @property
    def transformer_layers(self):
        """The block each of the `num_layers` layers runs (shared blocks repeat)."""
        return tuple(self._layer_sequence(self.config))
