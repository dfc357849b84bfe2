"""A Dense projection over the last axis, computed as one 2-D product."""

import functools

import keras

GELU_FORMS = {"gelu": False, "gelu_tanh": True}  # activation -> approximate


def check_gelu(activation, field="activation"):
    """`activation` if it names a GELU form, else a ValueError naming it."""
    if activation not in GELU_FORMS:
        raise ValueError(f"{field}={activation!r}: expected one of {sorted(GELU_FORMS)}.")
    return activation


def gelu(x, activation="gelu"):
    """GELU in the form `activation` names (see `zoo.configs.ACTIVATIONS`)."""
    return keras.activations.gelu(x, approximate=GELU_FORMS[check_gelu(activation)])


@functools.cache
def _tf_gelu_for_training():
    """`gelu_for_training`, built on the first TensorFlow call, so that JAX
    and PyTorch processes never import TensorFlow."""
    # TensorFlow-only: called from Projection's TensorFlow branch alone.
    import tensorflow as tf

    @tf.custom_gradient
    def fn(x):
        cdf = 0.5 * (1.0 + tf.math.erf(x * 0.7071067811865476))

        def grad(upstream):
            return upstream * (cdf + x * (0.3989422804014327 * tf.exp(-0.5 * tf.square(x))))

        return x * cdf, grad

    return fn


def gelu_for_training(x):
    """Exact (erf) GELU, `x * Phi(x)`, with a hand-written gradient,
    `Phi(x) + x * phi(x)`, reusing the forward pass's `Phi(x)`.

    TensorFlow's `tf.nn.gelu` is written with `erfc`, which Eigen evaluates
    ~1.5x slower than `erf`, and its gradient is derived op by op through
    `erfc`'s (Neg, Square, Exp and five products over the `[tokens,
    intermediate]` activation). Forward and backward here take 21 ms
    against 30 ms on a `[2048, 1536]` activation, 2 threads; outputs equal
    `tf.nn.gelu` to 7.2e-7 and gradients to 9.5e-7 (BUILD_NOTES.md,
    "Training and distribution"). `Projection` uses it while training on
    TensorFlow; inference keeps `tf.nn.gelu`, which oneDNN fuses into the
    product. TensorFlow only (JAX and PyTorch differentiate `gelu`).
    """
    return _tf_gelu_for_training()(x)


def dense_on_rows(layer, x):
    """`layer(x)` for a `keras.layers.Dense` on a 2-D `x` (`[batch, in]`):
    in float16 on TensorFlow, through a leading axis of 1, which keeps the
    product out of the fused float16 kernel `Projection.call` avoids (a
    `[16, 384] x [384, 384]` tanh pooler: 89 ms fused, well under 1 ms not)."""
    if keras.backend.backend() != "tensorflow" or layer.compute_dtype != "float16":
        return layer(x)
    return layer(keras.ops.expand_dims(x, 0))[0]


@keras.saving.register_keras_serializable(package="zoo")
class Projection(keras.layers.Dense):
    """`keras.layers.Dense` whose TensorFlow graph is `Reshape -> MatMul ->
    BiasAdd [-> GELU] -> Reshape`, with the same weights, names and results.

    Keras's Dense multiplies a `[batch, seq, in]` input with `tf.tensordot`,
    whose reshape sits between the product and the bias, and applies GELU
    after reshaping back; TensorFlow's oneDNN graph rewrite then cannot fuse
    them. As one 2-D product followed directly by `BiasAdd` and GELU, the
    rewrite runs product, bias and GELU as a single kernel (`_MklFusedMatMul`)
    and the shape arithmetic of `tensordot` disappears. The gain is modest
    (MiniLM's batch-1 forward pass 3-4% faster on one core; BUILD_NOTES.md,
    "Training and distribution"): the products themselves dominate. LiteRT's
    converter turns the same graph into `FULLY_CONNECTED` and `GELU`.

    Args:
        units: output size.
        gelu: None, or the GELU form applied to the product (`"gelu"`, the
            exact erf form; `"gelu_tanh"`, the tanh approximation).
        **kwargs: as for `keras.layers.Dense` (no `activation`: use `gelu`).

    Keras's LoRA and quantized Dense modes, and the JAX and PyTorch backends,
    use Dense's own call followed by `gelu` (the same weights and results to
    float32 rounding; issue #39).
    """

    def __init__(self, units, gelu=None, **kwargs):
        if kwargs.get("activation") not in (None, "linear"):
            raise ValueError(
                f"Projection(activation={kwargs['activation']!r}): only `gelu=` is supported; "
                "use keras.layers.Dense for other activations."
            )
        super().__init__(units, **kwargs)
        self.gelu = None if gelu is None else check_gelu(gelu, "gelu")

    def call(self, inputs, training=None):
        if (
            self.lora_enabled
            or self.quantization_mode is not None
            or keras.backend.backend() != "tensorflow"
        ):
            y = super().call(inputs, training=training)
            return y if self.gelu is None else gelu(y, self.gelu)
        # TensorFlow-only branch (the backend is TensorFlow here, so it is loaded).
        import tensorflow as tf

        x = tf.convert_to_tensor(inputs)
        kernel = tf.cast(tf.convert_to_tensor(self.kernel), x.dtype)
        rank = x.shape.rank
        flat = x if rank == 2 else tf.reshape(x, [-1, x.shape[-1]])
        y = tf.matmul(flat, kernel)
        # On a CPU with AVX-512 FP16, TensorFlow's oneDNN rewrite fuses a
        # float16 `MatMul -> BiasAdd` (or `Add`) into an inner product that
        # oneDNN runs with its reference kernel, about 1,000x slower than the
        # product alone (`[128, 384] x [384, 1536]`: 1.5-2.1 s against 1.8 ms;
        # BUILD_NOTES.md, "Training and distribution"). In float16 a reshape to
        # `[1, tokens, units]` keeps them apart (a reshape to the same shape
        # would be an identity that Grappler removes).
        unfused = x.dtype == tf.float16
        if unfused:
            y = tf.reshape(y, [1, -1, self.units])
        if self.use_bias:
            y = tf.nn.bias_add(y, tf.cast(tf.convert_to_tensor(self.bias), y.dtype))
        if self.gelu == "gelu" and training:
            y = gelu_for_training(y)
        elif self.gelu is not None:
            # float32/bfloat16: on the 2-D product, where oneDNN fuses it
            y = gelu(y, self.gelu)
        if rank == 2 and not unfused:
            return y
        y = tf.reshape(y, tf.concat([tf.shape(x)[:-1], [self.units]], 0))
        y.set_shape(x.shape[:-1].concatenate([self.units]))
        return y

    def get_config(self):
        config = super().get_config()
        config["gelu"] = self.gelu
        return config
