"""The BERT encoder as a Keras functional model."""

import keras
from keras import ops

from zoo.configs import INPUT_NAMES, EncoderConfig, get_preset
from zoo.layers.embeddings import BertEmbeddings
from zoo.layers.transformer_encoder import TransformerEncoderBlock
from zoo.models.backend_compat import setattr_before_init
from zoo.utils.budget import check_memory

# The encoder class of each `EncoderConfig.family`; a subclass with a new
# `_family` adds itself (see `BertEncoder.__init_subclass__`).
ENCODER_CLASSES = {}


@keras.saving.register_keras_serializable(package="zoo")
class BertEncoder(keras.Model):
    """BERT: embeddings, `num_layers` post-LN transformer blocks, tanh pooler.

    Inputs: a dict of int32 `[batch, seq]` tensors `token_ids`,
    `segment_ids` and `padding_mask` (1 = real token), as the tokenizer
    returns them. Outputs: a dict with `sequence_output` `[batch, seq,
    hidden_dim]` and `pooled_output` `[batch, hidden_dim]`.

    Every layer's hidden states and attention probabilities are in the graph;
    `with_internals()` returns a model sharing these weights that outputs them
    too (distillation needs both).

    Example:
        >>> encoder = BertEncoder.from_preset("bert_tiny")
        >>> out = encoder({"token_ids": ids, "segment_ids": seg, "padding_mask": mask})
        >>> out["sequence_output"].shape
    """

    _family = "bert"
    __setattr__ = setattr_before_init  # layers are set before __init__ (PyTorch)

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        ENCODER_CLASSES.setdefault(cls._family, cls)

    def __init__(
        self,
        vocabulary_size,
        num_layers,
        num_heads,
        hidden_dim,
        intermediate_dim,
        max_sequence_length=512,
        num_segments=2,
        dropout=0.1,
        layer_norm_epsilon=1e-12,
        initializer_range=0.02,
        activation="gelu",
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
        super().__init__(inputs=inputs, outputs=outputs, dtype=dtype, **kwargs)

        # === Config ===
        self._store_config(config)
        self._internal_outputs = internals

    # The steps of `__init__`; a subclass (AlbertEncoder) replaces the first
    # two. Layers are created in a fixed order: each draws its initializers'
    # seeds from Keras's global generator, so the order makes the weights of
    # a seeded model.

    def _create_layers(self, config, dtype):
        """`embeddings`, `transformer_layers` and `pooler_dense` (None
        without a pooler), named as checkpoints and saved weights expect."""
        self.embeddings = self._create_embeddings(config, dtype)
        self.transformer_layers = [
            TransformerEncoderBlock(
                config.num_heads,
                config.hidden_dim,
                config.intermediate_dim,
                dropout=config.dropout,
                layer_norm_epsilon=config.layer_norm_epsilon,
                initializer_range=config.initializer_range,
                activation=config.activation,
                dtype=dtype,
                name=f"transformer_layer_{i}",
            )
            for i in range(config.num_layers)
        ]
        self.pooler_dense = None
        if config.has_pooler:
            # The pooled output is a tanh dense layer on top of [CLS]; BERT's
            # NSP head was trained on it.
            self.pooler_dense = keras.layers.Dense(
                config.hidden_dim,
                activation="tanh",
                kernel_initializer=keras.initializers.TruncatedNormal(
                    stddev=config.initializer_range
                ),
                dtype=dtype,
                name="pooler_dense",
            )

    def _create_embeddings(self, config, dtype, layer=BertEmbeddings, **extra):
        """The embeddings layer (RobertaEncoder passes its own, with positions
        counted past the padding id)."""
        return layer(
            config.vocabulary_size,
            config.hidden_dim,
            max_sequence_length=config.max_sequence_length,
            num_segments=config.num_segments,
            dropout=config.dropout,
            layer_norm_epsilon=config.layer_norm_epsilon,
            initializer_range=config.initializer_range,
            dtype=dtype,
            name="embeddings",
            **extra,
        )

    def _functional_outputs(self, inputs, config):
        """(outputs, (hidden_states, attention_probs)) of the graph on the
        named `inputs`: embeddings, then the transformer stack."""
        x = self.embeddings(inputs["token_ids"], inputs["segment_ids"])
        return self._transformer_stack(x, self.transformer_layers, inputs["padding_mask"])

    def _transformer_stack(self, x, layers, padding_mask):
        """`layers` in turn on the embedded `x`, then the pooler on [CLS];
        every layer's output and attention probabilities are kept for
        `with_internals`."""
        hidden_states, attention_probs = [x], []
        for layer in layers:
            x, probs = layer(x, padding_mask=padding_mask)
            hidden_states.append(x)
            attention_probs.append(probs)
        outputs = {"sequence_output": x}
        if self.pooler_dense is not None:
            outputs["pooled_output"] = self.pooler_dense(x[:, 0, :])
        return outputs, (hidden_states, attention_probs)

    def _store_config(self, config):
        """The constructor's arguments as attributes (`_config_fields`)."""
        self.vocabulary_size = config.vocabulary_size
        self.num_layers = config.num_layers
        self.num_heads = config.num_heads
        self.hidden_dim = config.hidden_dim
        self.intermediate_dim = config.intermediate_dim
        self.max_sequence_length = config.max_sequence_length
        self.num_segments = config.num_segments
        self.dropout = config.dropout
        self.layer_norm_epsilon = config.layer_norm_epsilon
        self.initializer_range = config.initializer_range
        self.activation = config.activation

    @property
    def config(self) -> EncoderConfig:
        """This encoder's hyperparameters as an `EncoderConfig`."""
        return EncoderConfig(**self._config_fields())

    def _config_fields(self) -> dict:
        # Subclasses with more hyperparameters (ALBERT) add theirs.
        return dict(
            vocabulary_size=self.vocabulary_size,
            num_layers=self.num_layers,
            num_heads=self.num_heads,
            hidden_dim=self.hidden_dim,
            intermediate_dim=self.intermediate_dim,
            max_sequence_length=self.max_sequence_length,
            num_segments=self.num_segments,
            dropout=self.dropout,
            layer_norm_epsilon=self.layer_norm_epsilon,
            initializer_range=self.initializer_range,
            family=self._family,
            activation=self.activation,
        )

    @property
    def token_embedding(self):
        """The token embedding layer (the masked-LM head ties its output to it)."""
        return self.embeddings.token_embedding

    def with_internals(self) -> keras.Model:
        """A model sharing this encoder's weights whose output dict also holds
        `hidden_states` (the embedding output, then each layer's output:
        `num_layers + 1` tensors `[batch, seq, hidden_dim]`) and
        `attention_probs` (`num_layers` tensors `[batch, heads, seq, seq]`)."""
        hidden_states, attention_probs = self._internal_outputs
        outputs = dict(self.output)
        outputs["hidden_states"] = list(hidden_states)
        outputs["attention_probs"] = list(attention_probs)
        return keras.Model(self.input, outputs, name=f"{self.name}_with_internals")

    @classmethod
    def from_preset(cls, name: str, **overrides):
        """Randomly initialised encoder from a preset in `zoo.PRESETS`."""
        config = get_preset(name)
        if overrides:
            config = config.replace(**overrides)
        if config.family != cls._family and cls is not BertEncoder:
            raise ValueError(
                f"Preset {name!r} is a {config.family}-family encoder; "
                f"{cls.__name__}.from_preset() builds {cls._family} encoders. "
                "Use zoo.BertEncoder.from_preset(), which picks the class."
            )
        return build_encoder(config)

    def get_config(self):
        # Flat constructor arguments only: plain JSON, and a reload re-runs
        # __init__ so the subclass (and `with_internals`) come back.
        return {
            "name": self.name,
            "trainable": self.trainable,
            # The policy the layers compute under (a functional model's own
            # `dtype_policy` does not follow a `dtype` given at construction).
            "dtype": keras.saving.serialize_keras_object(self.compute_policy),
            **self.config.model_arguments(),
        }

    @property
    def compute_policy(self):
        """The dtype policy the encoder's layers compute under."""
        return self.get_layer("embeddings").dtype_policy

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        if isinstance(config.get("dtype"), dict):
            config["dtype"] = keras.saving.deserialize_keras_object(config["dtype"])
        return cls(**config)


ENCODER_CLASSES["bert"] = BertEncoder


def build_encoder(config: EncoderConfig, **kwargs):
    """A randomly initialised encoder of the class `config.family` names."""
    family = config.family
    if family not in ENCODER_CLASSES:
        raise ValueError(
            f"EncoderConfig.family {family!r}: no encoder class is registered for it; "
            f"known families: {sorted(ENCODER_CLASSES)}."
        )
    return ENCODER_CLASSES[family](**config.model_arguments(), **kwargs)


def padding_mean(sequence_output, padding_mask):
    """Mean of `sequence_output` over real tokens (sentence-transformers pooling)."""
    mask = ops.cast(padding_mask, sequence_output.dtype)[:, :, None]
    total = ops.sum(sequence_output * mask, axis=1)
    count = ops.maximum(ops.sum(mask, axis=1), 1.0)
    return total / count
