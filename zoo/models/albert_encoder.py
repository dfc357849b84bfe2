"""The ALBERT encoder (Lan et al. 2019) as a Keras functional model."""

import keras

from zoo.configs import INPUT_NAMES, EncoderConfig
from zoo.layers.embeddings import BertEmbeddings
from zoo.layers.transformer_encoder import TransformerEncoderBlock
from zoo.models.bert_encoder import BertEncoder
from zoo.utils.budget import check_memory


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

    def __init__(
        self,
        vocabulary_size,
        num_layers,
        num_heads,
        hidden_dim,
        intermediate_dim,
        embedding_dim=128,
        num_groups=1,
        max_sequence_length=512,
        num_segments=2,
        dropout=0.0,
        layer_norm_epsilon=1e-12,
        initializer_range=0.02,
        activation="gelu_tanh",
        dtype=None,
        **kwargs,
    ):
        # Validate through the config so a bad value fails with one message.
        config = EncoderConfig(
            vocabulary_size=vocabulary_size,
            num_layers=num_layers,
            num_heads=num_heads,
            hidden_dim=hidden_dim,
            intermediate_dim=intermediate_dim,
            max_sequence_length=max_sequence_length,
            num_segments=num_segments,
            dropout=dropout,
            layer_norm_epsilon=layer_norm_epsilon,
            initializer_range=initializer_range,
            family=self._family,
            activation=activation,
            embedding_dim=embedding_dim,
            num_groups=num_groups,
        )

        # A config in range can still describe a model this machine cannot
        # hold: refuse it before the first weight is allocated.
        check_memory(config, type(self).__name__)

        # === Layers ===
        self._create_layers(config, dtype)

        # === Functional model ===
        inputs = {
            name: keras.Input(shape=(None,), dtype="int32", name=name)
            for name in INPUT_NAMES
        }
        outputs, internals = self._functional_outputs(inputs, config)
        # Skip BertEncoder.__init__ (it takes BERT's arguments) and go to the
        # functional model's. Not `keras.Model.__init__(self, ...)`: once Keras
        # has injected `Functional` into the bases, that re-injects and fails.
        super(BertEncoder, self).__init__(
            inputs=inputs, outputs=outputs, dtype=dtype, **kwargs
        )

        # === Config ===
        self._store_config(config)
        self._internal_outputs = internals

    def _create_layers(self, config, dtype):
        """`embeddings` (E wide), `embedding_projection` (E -> H), the
        `num_groups` distinct `blocks` and `pooler_dense`."""

        def init():
            return keras.initializers.TruncatedNormal(stddev=config.initializer_range)

        self.embeddings = BertEmbeddings(
            config.vocabulary_size,
            config.embedding_dim,
            max_sequence_length=config.max_sequence_length,
            num_segments=config.num_segments,
            dropout=config.dropout,
            layer_norm_epsilon=config.layer_norm_epsilon,
            initializer_range=config.initializer_range,
            dtype=dtype,
            name="embeddings",
        )
        self.embedding_projection = keras.layers.Dense(
            config.hidden_dim,
            kernel_initializer=init(),
            dtype=dtype,
            name="embedding_projection",
        )
        self.blocks = [
            TransformerEncoderBlock(
                config.num_heads,
                config.hidden_dim,
                config.intermediate_dim,
                dropout=config.dropout,
                layer_norm_epsilon=config.layer_norm_epsilon,
                initializer_range=config.initializer_range,
                activation=config.activation,
                dtype=dtype,
                name=f"shared_layer_{g}",
            )
            for g in range(config.num_groups)
        ]
        self.pooler_dense = keras.layers.Dense(
            config.hidden_dim,
            activation="tanh",
            kernel_initializer=init(),
            dtype=dtype,
            name="pooler_dense",
        )

    def _functional_outputs(self, inputs, config):
        """Embeddings, their projection to H, then layer i running block
        `i // (num_layers // num_groups)`."""
        x = self.embeddings(inputs["token_ids"], inputs["segment_ids"])
        x = self.embedding_projection(x)  # (B, T, E) -> (B, T, H)
        per_group = config.num_layers // config.num_groups
        layers = [self.blocks[i // per_group] for i in range(config.num_layers)]
        return self._transformer_stack(x, layers, inputs["padding_mask"])

    def _store_config(self, config):
        super()._store_config(config)
        self.embedding_dim = config.embedding_dim
        self.num_groups = config.num_groups

    @property
    def transformer_layers(self):
        """The block each of the `num_layers` layers runs (shared blocks repeat)."""
        per_group = self.num_layers // self.num_groups
        return tuple(self.blocks[i // per_group] for i in range(self.num_layers))

    def _config_fields(self) -> dict:
        return {
            **super()._config_fields(),
            "embedding_dim": self.embedding_dim,
            "num_groups": self.num_groups,
        }
