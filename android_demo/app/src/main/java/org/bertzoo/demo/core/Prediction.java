package org.bertzoo.demo.core;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/** A classification: the label, every class's probability and logit, and how it was computed. */
public final class Prediction {
  public final int index;
  public final String label;
  public final List<String> labels;
  public final float[] logits;
  public final float[] probabilities;
  /** Signature the input went to, its length, and the real tokens in it. */
  public final String signatureKey;

  public final int sequenceLength;
  public final int numTokens;
  public final boolean truncated;
  /** Time inside the runtime, and from text to prediction. */
  public final double inferenceMillis;

  public final double totalMillis;

  Prediction(
      int index,
      List<String> labels,
      float[] logits,
      float[] probabilities,
      String signatureKey,
      int sequenceLength,
      int numTokens,
      boolean truncated,
      double inferenceMillis,
      double totalMillis) {
    this.index = index;
    this.labels = Collections.unmodifiableList(new ArrayList<String>(labels));
    this.label = labels.get(index);
    this.logits = logits;
    this.probabilities = probabilities;
    this.signatureKey = signatureKey;
    this.sequenceLength = sequenceLength;
    this.numTokens = numTokens;
    this.truncated = truncated;
    this.inferenceMillis = inferenceMillis;
    this.totalMillis = totalMillis;
  }

  /** Class indices from most to least probable. */
  public int[] ranking() {
    int n = probabilities.length;
    Integer[] order = new Integer[n];
    for (int i = 0; i < n; i++) {
      order[i] = i;
    }
    java.util.Arrays.sort(
        order,
        new java.util.Comparator<Integer>() {
          @Override
          public int compare(Integer a, Integer b) {
            float pa = probabilities[a];
            float pb = probabilities[b];
            return pa > pb ? -1 : pa < pb ? 1 : a - b;
          }
        });
    int[] out = new int[n];
    for (int i = 0; i < n; i++) {
      out[i] = order[i];
    }
    return out;
  }
}
