package org.bertzoo.demo.core;

/**
 * One example packed for the model: the int32 {@code [1, L]} inputs {@code token_ids}, {@code
 * segment_ids} and {@code padding_mask} (1 = real token), and what truncation kept.
 */
public final class EncodedInput {
  public static final String TOKEN_IDS = "token_ids";
  public static final String SEGMENT_IDS = "segment_ids";
  public static final String PADDING_MASK = "padding_mask";

  public final int[] tokenIds;
  public final int[] segmentIds;
  public final int[] paddingMask;
  /** Word pieces of each segment before truncation. */
  public final int piecesA;

  public final int piecesB;
  /** Word pieces of each segment kept. */
  public final int keptA;

  public final int keptB;

  EncodedInput(
      int[] tokenIds, int[] segmentIds, int[] paddingMask, int piecesA, int piecesB, int keptA, int keptB) {
    this.tokenIds = tokenIds;
    this.segmentIds = segmentIds;
    this.paddingMask = paddingMask;
    this.piecesA = piecesA;
    this.piecesB = piecesB;
    this.keptA = keptA;
    this.keptB = keptB;
  }

  public int sequenceLength() {
    return tokenIds.length;
  }

  public boolean truncated() {
    return keptA < piecesA || keptB < piecesB;
  }

  /** Real tokens, special tokens included. */
  public int numTokens() {
    int n = 0;
    for (int m : paddingMask) {
      n += m;
    }
    return n;
  }

  /**
   * Checks the inputs before they reach the model, which would read out of its embedding tables
   * (or crash) on a bad id rather than fail cleanly.
   *
   * @param vocabularySize ids must lie in {@code [0, vocabularySize)}
   * @param numSegments segment ids must lie in {@code [0, numSegments)}
   * @param sequenceLength the length of the signature these inputs go to
   * @throws IllegalArgumentException naming the first bad value
   */
  public void validate(int vocabularySize, int numSegments, int sequenceLength) {
    if (tokenIds.length != sequenceLength
        || segmentIds.length != sequenceLength
        || paddingMask.length != sequenceLength) {
      throw new IllegalArgumentException(
          "Inputs have lengths token_ids="
              + tokenIds.length
              + ", segment_ids="
              + segmentIds.length
              + ", padding_mask="
              + paddingMask.length
              + " but the model signature takes "
              + sequenceLength
              + ". Encode the text with the signature's sequence length.");
    }
    boolean padding = false;
    for (int i = 0; i < sequenceLength; i++) {
      if (tokenIds[i] < 0 || tokenIds[i] >= vocabularySize) {
        throw new IllegalArgumentException(
            "token_ids["
                + i
                + "] = "
                + tokenIds[i]
                + " is outside the model's vocabulary (0 to "
                + (vocabularySize - 1)
                + "). Use the vocab.txt exported with this model.");
      }
      if (segmentIds[i] < 0 || segmentIds[i] >= numSegments) {
        throw new IllegalArgumentException(
            "segment_ids["
                + i
                + "] = "
                + segmentIds[i]
                + " but the model has "
                + numSegments
                + " segment types (ids 0 to "
                + (numSegments - 1)
                + ").");
      }
      if (paddingMask[i] != 0 && paddingMask[i] != 1) {
        throw new IllegalArgumentException(
            "padding_mask[" + i + "] = " + paddingMask[i] + "; it must be 1 (token) or 0 (padding).");
      }
      if (paddingMask[i] == 1 && padding) {
        throw new IllegalArgumentException(
            "padding_mask has a real token at position "
                + i
                + " after padding; real tokens must come first.");
      }
      padding |= paddingMask[i] == 0;
    }
    if (sequenceLength > 0 && paddingMask[0] == 0) {
      throw new IllegalArgumentException(
          "padding_mask[0] = 0: the input holds no token, not even [CLS]. Encode the text with"
              + " WordPieceTokenizer.encode.");
    }
  }
}
