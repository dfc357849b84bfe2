package org.bertzoo.demo.core;

import java.util.List;

/** Logits to a prediction: dequantize, softmax, argmax, label. */
public final class PostProcessor {
  private PostProcessor() {}

  /**
   * Numerically stable softmax (the maximum is subtracted first, sums in double), so logits of
   * any size give probabilities that sum to 1.
   */
  public static float[] softmax(float[] logits) {
    if (logits.length == 0) {
      throw new IllegalArgumentException("softmax needs at least one logit; received none.");
    }
    float max = Float.NEGATIVE_INFINITY;
    for (float v : logits) {
      if (Float.isNaN(v)) {
        throw new IllegalArgumentException(
            "The model returned a NaN logit. The model file is broken (re-export it) or its"
                + " inputs are wrong.");
      }
      max = Math.max(max, v);
    }
    double[] e = new double[logits.length];
    double sum = 0;
    for (int i = 0; i < logits.length; i++) {
      e[i] = Math.exp((double) logits[i] - max);
      sum += e[i];
    }
    float[] out = new float[logits.length];
    for (int i = 0; i < logits.length; i++) {
      out[i] = (float) (e[i] / sum);
    }
    return out;
  }

  /** Index of the largest value; the first one on a tie (as numpy's argmax). */
  public static int argmax(float[] values) {
    int best = 0;
    for (int i = 1; i < values.length; i++) {
      if (values[i] > values[best]) {
        best = i;
      }
    }
    return best;
  }

  /** Logits of one example: {@code [1, C]} or {@code [C]}, float or quantized. */
  public static float[] logits(OutputTensor output, int numClasses) {
    int[] shape = output.shape;
    boolean ok =
        (shape.length == 2 && shape[0] == 1 && shape[1] == numClasses)
            || (shape.length == 1 && shape[0] == numClasses);
    if (!ok) {
      throw new IllegalArgumentException(
          "The logits output has shape "
              + java.util.Arrays.toString(shape)
              + " but the metadata lists "
              + numClasses
              + " labels; expected [1, "
              + numClasses
              + "]. Use the metadata.json exported with this model.");
    }
    return output.dequantize();
  }

  static Prediction predict(
      OutputTensor output,
      List<String> labels,
      String signatureKey,
      EncodedInput input,
      double inferenceMillis,
      double totalMillis) {
    float[] logits = logits(output, labels.size());
    float[] probabilities = softmax(logits);
    return new Prediction(
        argmax(logits),
        labels,
        logits,
        probabilities,
        signatureKey,
        input.sequenceLength(),
        input.numTokens(),
        input.truncated(),
        inferenceMillis,
        totalMillis);
  }
}
