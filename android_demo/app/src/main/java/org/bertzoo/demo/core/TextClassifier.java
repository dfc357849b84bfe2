package org.bertzoo.demo.core;

import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Text in, prediction out: tokenize, pick the signature, pack, validate, run, post-process.
 *
 * <p>No {@code android.*} here: the app runs it with the LiteRT {@code Interpreter}, the JVM
 * end-to-end check with the LiteRT C library, through the same {@link SignatureRunner} interface.
 */
public final class TextClassifier {
  private final WordPieceTokenizer tokenizer;
  private final ModelMetadata metadata;
  private final SignatureRunner runner;
  private final int[] lengths;

  /**
   * @throws IllegalArgumentException if the model file, the metadata and the vocabulary do not
   *     belong together (a signature or input is missing, casing or vocabulary size differ)
   */
  public TextClassifier(WordPieceTokenizer tokenizer, ModelMetadata metadata, SignatureRunner runner) {
    this.tokenizer = tokenizer;
    this.metadata = metadata;
    this.runner = runner;
    this.lengths = metadata.sequenceLengths();
    if (!metadata.task.equals("classify")) {
      throw new IllegalArgumentException(
          "This app classifies text; metadata.json says the model's task is '" + metadata.task
              + "'. Export a zoo.Classifier.");
    }
    if (metadata.lowercase != tokenizer.lowercase()) {
      throw new IllegalArgumentException(
          "metadata.json says lowercase=" + metadata.lowercase + " but the tokenizer was built with"
              + " lowercase=" + tokenizer.lowercase() + ". Build it from the metadata.");
    }
    if (metadata.vocabularySize >= 0 && metadata.vocabularySize != tokenizer.vocabularySize()) {
      throw new IllegalArgumentException(
          "vocab.txt has " + tokenizer.vocabularySize() + " tokens but the model was exported with "
              + metadata.vocabularySize + ". Copy the vocab.txt exported with this model.");
    }
    if (metadata.vocabularySha256 != null
        && !metadata.vocabularySha256.equals(tokenizer.vocabularySha256())) {
      throw new IllegalArgumentException(
          "vocab.txt is not the vocabulary the model was exported with (its sha256 differs from"
              + " metadata.json's vocabulary_sha256). Copy model.tflite, vocab.txt and"
              + " metadata.json from one export.");
    }
    List<String> keys = Arrays.asList(runner.signatureKeys());
    for (ModelMetadata.Signature s : metadata.signatures) {
      if (!keys.contains(s.key)) {
        throw new IllegalArgumentException(
            "metadata.json lists signature '" + s.key + "' but model.tflite has " + keys
                + ". Copy model.tflite and metadata.json from the same export.");
      }
      List<String> inputs = Arrays.asList(runner.inputNames(s.key));
      String[] needed = {EncodedInput.TOKEN_IDS, EncodedInput.SEGMENT_IDS, EncodedInput.PADDING_MASK};
      for (String name : needed) {
        if (!inputs.contains(name)) {
          throw new IllegalArgumentException(
              "Signature '" + s.key + "' has inputs " + inputs + "; it needs '" + name
                  + "'. Export the model with the project's exporter (inputs by name).");
        }
      }
      if (!Arrays.asList(runner.outputNames(s.key)).contains(metadata.logitsOutput)) {
        throw new IllegalArgumentException(
            "Signature '" + s.key + "' has outputs " + Arrays.toString(runner.outputNames(s.key))
                + "; expected '" + metadata.logitsOutput + "'.");
      }
    }
  }

  public ModelMetadata metadata() {
    return metadata;
  }

  public WordPieceTokenizer tokenizer() {
    return tokenizer;
  }

  /**
   * The shortest length that holds {@code neededTokens} (special tokens included), or the longest
   * one when none does (the text is then truncated).
   */
  public static int chooseSequenceLength(int neededTokens, int[] ascendingLengths) {
    if (ascendingLengths.length == 0) {
      throw new IllegalArgumentException("No sequence lengths to choose from.");
    }
    for (int length : ascendingLengths) {
      if (neededTokens <= length) {
        return length;
      }
    }
    return ascendingLengths[ascendingLengths.length - 1];
  }

  /** Packs {@code text} (and {@code textB}, may be null) for the signature that fits it. */
  public EncodedInput encode(String text, String textB) {
    int[] a = tokenizer.tokenize(text);
    int[] b = textB == null ? null : tokenizer.tokenize(textB);
    int needed = a.length + 2 + (b == null ? 0 : b.length + 1);
    return tokenizer.pack(a, b, chooseSequenceLength(needed, lengths));
  }

  public Prediction classify(String text) throws Exception {
    return classify(text, null);
  }

  public Prediction classify(String text, String textB) throws Exception {
    long start = System.nanoTime();
    EncodedInput input = encode(text, textB);
    return run(input, start);
  }

  /** Runs already-packed inputs (their length picks the signature). */
  public Prediction run(EncodedInput input) throws Exception {
    return run(input, System.nanoTime());
  }

  private Prediction run(EncodedInput input, long start) throws Exception {
    ModelMetadata.Signature signature = null;
    for (ModelMetadata.Signature s : metadata.signatures) {
      if (s.sequenceLength == input.sequenceLength()) {
        signature = s;
      }
    }
    if (signature == null) {
      throw new IllegalArgumentException(
          "No signature takes sequence length " + input.sequenceLength() + "; the model has "
              + Arrays.toString(lengths) + ".");
    }
    input.validate(
        metadata.vocabularySize >= 0 ? metadata.vocabularySize : tokenizer.vocabularySize(),
        metadata.numSegments,
        signature.sequenceLength);
    Map<String, int[]> inputs = new HashMap<String, int[]>();
    inputs.put(EncodedInput.TOKEN_IDS, input.tokenIds);
    inputs.put(EncodedInput.SEGMENT_IDS, input.segmentIds);
    inputs.put(EncodedInput.PADDING_MASK, input.paddingMask);
    long t0 = System.nanoTime();
    Map<String, OutputTensor> outputs = runner.run(signature.key, inputs);
    long t1 = System.nanoTime();
    OutputTensor logits = outputs.get(metadata.logitsOutput);
    if (logits == null) {
      throw new IllegalStateException(
          "The runner returned outputs " + outputs.keySet() + " without '" + metadata.logitsOutput + "'.");
    }
    return PostProcessor.predict(
        logits, metadata.labels, signature.key, input, (t1 - t0) / 1e6, (System.nanoTime() - start) / 1e6);
  }
}
