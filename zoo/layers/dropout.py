"""Dropout that draws 16 random bits per element instead of a float."""

import keras

_LEVELS = 65536  # 16-bit draws


@keras.saving.register_keras_serializable(package="zoo")
class Dropout(keras.layers.Dropout):
    """`keras.layers.Dropout` whose TensorFlow training path draws half as
    many random numbers: 16 bits per element, two from each 32-bit Philox
    output, instead of one float per element.

    TensorFlow's stateless random kernel was ~6% of a MiniLM fine-tuning
    step's op time, most of it the attention probabilities' `[batch, heads,
    seq, seq]` mask (BUILD_NOTES.md, "Training and distribution"). An element is
    dropped when its draw is below `round(rate * 65536)`, and kept ones are
    scaled by `65536 / (65536 - that)`, so the output's expectation is the
    input's exactly, and the drop probability is `rate` to within 7.7e-6
    (0.1 -> 0.10000610). The seed comes from the layer's `SeedGenerator` as
    in Keras, so runs stay reproducible and resumable; the masks differ from
    Keras's own. Inference (`training` false) is the identity, as in Keras;
    `noise_shape`, an odd or unknown last axis, a rate that rounds to 0 or
    65536 levels, and other backends use Keras's own dropout.
    """

    def call(self, inputs, training=False):
        threshold = round(self.rate * _LEVELS)
        static = tuple(inputs.shape)
        last = static[-1] if static else None
        if (
            not training
            or self.noise_shape is not None
            or not 0 < threshold < _LEVELS
            or last is None
            or last % 2
            or keras.backend.backend() != "tensorflow"
        ):
            return super().call(inputs, training=training)
        # TensorFlow-only branch: the backend is TensorFlow here, so it is loaded
        # already; JAX and PyTorch processes never import it (issue #39).
        import tensorflow as tf

        x = tf.convert_to_tensor(inputs)
        seed = self.seed_generator.next()
        if seed.dtype != tf.int32:  # as Keras's TensorFlow backend casts it
            seed = tf.cast(tf.math.floormod(seed, tf.int32.max - 1), tf.int32)
        shape = tf.shape(x)
        bits = tf.random.stateless_uniform(
            tf.concat([shape[:-1], [last // 2]], 0),
            seed,
            minval=None,
            maxval=None,
            dtype=tf.uint32,
        )
        draws = tf.reshape(tf.bitcast(bits, tf.uint16), shape)
        keep = draws >= tf.constant(threshold, tf.uint16)
        scale = tf.cast(_LEVELS / (_LEVELS - threshold), x.dtype)
        return tf.where(keep, x * scale, tf.zeros((), x.dtype))
