"""The BERT encoder as a Keras functional model."""

import keras
from keras import ops

from zoo.configs import FAMILY_DEFAULTS, INPUT_NAMES, SIZES, EncoderConfig, get_preset
from zoo.layers.embeddings import BertEmbeddings
from zoo.layers.projection import dense_on_rows
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
    # Constructor arguments the family accepts (one interface for every
    # encoder) and ignores, since it fixes their value.
    _ignored_arguments = ()
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
        *,
        dtype=None,
        **kwargs,
    ):
        """The five sizes, then any other `EncoderConfig` field by keyword:
        one not given is the family's default (`zoo.configs.FAMILY_DEFAULTS`).
        Other keywords go to `keras.Model`."""
        for name in self._ignored_arguments:
            kwargs.pop(name, None)
        defaults = FAMILY_DEFAULTS[self._family]
        given = {name: kwargs.pop(name) for name in defaults if name in kwargs}
        # Validate through the config so a bad value fails with one message.
        config = EncoderConfig.for_family(
            self._family,
            vocabulary_size=vocabulary_size,
            num_layers=num_layers,
            num_heads=num_heads,
            hidden_dim=hidden_dim,
            intermediate_dim=intermediate_dim,
            **given,
        )

        # A config in range can still describe a model this machine cannot
        # hold: refuse it before the first weight is allocated.
        check_memory(config, type(self).__name__)

        # === Layers ===
        # Created in a fixed order: each draws its initializers' seeds from
        # Keras's global generator, so the order makes the weights of a
        # seeded model. A family replaces the steps it builds differently.
        self._create_embeddings(config, dtype)
        self._create_blocks(config, dtype)
        self._create_pooler(config, dtype)

        # === Functional model ===
        inputs = {
            name: keras.Input(shape=(None,), dtype="int32", name=name)
            for name in INPUT_NAMES
        }
        x = self._embed(inputs)
        outputs, internals = self._transformer_stack(
            x, self._layer_sequence(config), inputs["padding_mask"]
        )
        super().__init__(inputs=inputs, outputs=outputs, dtype=dtype, **kwargs)

        # === Config ===
        # Every field as an attribute (`encoder.hidden_dim`); `config` reads
        # them back.
        for name, value in config.to_dict().items():
            if name != "family":
                setattr(self, name, value)
        self._internal_outputs = internals

    # The steps of `__init__` a family may replace, each named as
    # checkpoints and saved weights expect.

    def _create_embeddings(self, config, dtype, layer=BertEmbeddings, **extra):
        """`embeddings`, `embedding_width` wide (RobertaEncoder passes its own
        layer, with positions counted past the padding id)."""
        self.embeddings = layer(
            config.vocabulary_size,
            config.embedding_width,
            max_sequence_length=config.max_sequence_length,
            num_segments=config.num_segments,
            dropout=config.dropout,
            layer_norm_epsilon=config.layer_norm_epsilon,
            initializer_range=config.initializer_range,
            dtype=dtype,
            name="embeddings",
            **extra,
        )

    def _create_blocks(self, config, dtype):
        """`transformer_layers`: one block per layer."""
        self.transformer_layers = self._new_blocks(config, dtype, "transformer_layer")

    def _new_blocks(self, config, dtype, name):
        """`config.num_blocks` post-LN transformer blocks named `{name}_{i}`."""
        return [
            TransformerEncoderBlock(
                config.num_heads,
                config.hidden_dim,
                config.intermediate_dim,
                dropout=config.dropout,
                layer_norm_epsilon=config.layer_norm_epsilon,
                initializer_range=config.initializer_range,
                activation=config.activation,
                dtype=dtype,
                name=f"{name}_{i}",
            )
            for i in range(config.num_blocks)
        ]

    def _create_pooler(self, config, dtype):
        """`pooler_dense`, or None without a pooler. The pooled output is a
        tanh dense layer on top of [CLS]; BERT's NSP head was trained on it."""
        self.pooler_dense = None
        if config.has_pooler:
            self.pooler_dense = keras.layers.Dense(
                config.hidden_dim,
                activation="tanh",
                kernel_initializer=keras.initializers.TruncatedNormal(
                    stddev=config.initializer_range
                ),
                dtype=dtype,
                name="pooler_dense",
            )

    def _embed(self, inputs):
        """The embedded sequence the first layer takes, from the named inputs."""
        return self.embeddings(inputs["token_ids"], inputs["segment_ids"])

    def _layer_sequence(self, config):
        """The block each of the `num_layers` layers runs, in order."""
        return self.transformer_layers

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
            outputs["pooled_output"] = dense_on_rows(self.pooler_dense, x[:, 0, :])
        return outputs, (hidden_states, attention_probs)

    @property
    def config(self) -> EncoderConfig:
        """This encoder's hyperparameters as an `EncoderConfig`."""
        fields = {
            name: getattr(self, name) for name in (*SIZES, *FAMILY_DEFAULTS[self._family])
        }
        return EncoderConfig(**fields, family=self._family)

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
