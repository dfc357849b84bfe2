package org.bertzoo.demo.core;

import java.util.ArrayList;
import java.util.Collections;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.json.JSONArray;
import org.json.JSONException;
import org.json.JSONObject;

/**
 * The exporter's {@code metadata.json}: what the app needs to feed the model and read its output.
 *
 * <p>Parsed with {@code org.json}, which Android ships (the JVM tests use Debian's copy of the
 * same code, {@code libandroid-json-java}).
 */
public final class ModelMetadata {
  /** The phone model's file name in the export directory and in the app's assets. */
  public static final String MODEL_FILE = "model.tflite";

  /** One {@code [1, L]} signature of the model file. */
  public static final class Signature {
    public final String key;
    public final int sequenceLength;

    Signature(String key, int sequenceLength) {
      this.key = key;
      this.sequenceLength = sequenceLength;
    }
  }

  public final String task;
  public final List<String> labels;
  /** Signatures sorted by sequence length, shortest first. */
  public final List<Signature> signatures;

  /** Lowercase text: the description's {@code lowercase} step, or else metadata's "lowercase". */
  public final boolean lowercase;
  /** Strip accents: the description's step, or else (older artifacts) the same as lowercase. */
  public final boolean stripAccents;
  /**
   * metadata.json's {@code "tokenization"} description, checked field by field; null for
   * artifacts written before it existed (then lowercase alone decides, BERT's rule).
   */
  public final TokenizationDescription tokenization;

  public final String quantization;
  /** Size of the model's token embedding; -1 when the metadata does not say. */
  public final int vocabularySize;

  /**
   * Segment ids the model accepts are 0 to numSegments - 1: metadata.json's input_contract, or
   * else the encoder config (a DistilBERT-style encoder, num_segments 0, ignores segments and
   * accepts the tokenizer's 0 and 1).
   */
  public final int numSegments;
  public final String logitsOutput;
  /** sha256 of vocab.txt's text as exported, or null. */
  public final String vocabularySha256;
  /** Size in bytes of model.tflite as exported (-1 if unknown) and the ops it uses. */
  public final long modelFileSize;

  public final List<String> ops;
  /** Every top-level scalar entry, for the about screen. */
  public final Map<String, String> summary;

  private ModelMetadata(
      String task,
      List<String> labels,
      List<Signature> signatures,
      boolean lowercase,
      boolean stripAccents,
      TokenizationDescription tokenization,
      String quantization,
      int vocabularySize,
      int numSegments,
      String logitsOutput,
      String vocabularySha256,
      long modelFileSize,
      List<String> ops,
      Map<String, String> summary) {
    this.task = task;
    this.labels = Collections.unmodifiableList(labels);
    this.signatures = Collections.unmodifiableList(signatures);
    this.lowercase = lowercase;
    this.stripAccents = stripAccents;
    this.tokenization = tokenization;
    this.quantization = quantization;
    this.vocabularySize = vocabularySize;
    this.numSegments = numSegments;
    this.logitsOutput = logitsOutput;
    this.vocabularySha256 = vocabularySha256;
    this.modelFileSize = modelFileSize;
    this.ops = Collections.unmodifiableList(ops);
    this.summary = Collections.unmodifiableMap(summary);
  }

  /**
   * Parses metadata.json text.
   *
   * @throws IllegalArgumentException naming the missing or malformed field
   */
  public static ModelMetadata parse(String json) {
    JSONObject o;
    try {
      o = new JSONObject(json);
    } catch (JSONException e) {
      throw new IllegalArgumentException(
          "metadata.json is not a JSON object (" + e.getMessage() + "). Copy the metadata.json"
              + " the exporter wrote beside model.tflite.");
    }
    try {
      return fromJson(o);
    } catch (JSONException e) {
      throw new IllegalArgumentException(
          "metadata.json has an unexpected layout: " + e.getMessage() + ". Re-export the model.");
    }
  }

  /**
   * The task under the names metadata.json uses since format 2 ("classify", "tag", "qa");
   * format-1 files wrote "classification", "token_classification", "question_answering".
   */
  static String canonicalTask(String task) {
    if (task.equals("classification")) {
      return "classify";
    }
    if (task.equals("token_classification")) {
      return "tag";
    }
    if (task.equals("question_answering")) {
      return "qa";
    }
    return task;
  }

  private static ModelMetadata fromJson(JSONObject o) throws JSONException {
    String task = canonicalTask(requireString(o, "task"));
    List<String> labels = new ArrayList<String>();
    if (o.has("labels") && !o.isNull("labels")) {
      JSONArray a = o.getJSONArray("labels");
      for (int i = 0; i < a.length(); i++) {
        labels.add(a.getString(i));
      }
    }
    if (labels.isEmpty() && !task.equals("classify")) {
      // A regressor (or QA model) has no labels by design: say what the app needs.
      throw new IllegalArgumentException(
          "metadata.json is for a '" + task + "' model, which has no labels; this app"
              + " classifies text: export a classifier (zoo finetune --task classify).");
    }
    if (labels.isEmpty()) {
      throw new IllegalArgumentException(
          "metadata.json has no 'labels' (task '" + task + "'). The app shows a label per class:"
              + " export the classifier with its label names.");
    }
    List<Signature> signatures = signatures(o);
    TokenizationDescription tokenization = null;
    boolean lowercase = o.optBoolean("lowercase", true);
    boolean stripAccents = lowercase;
    if (o.has(TokenizationDescription.FIELD)) {
      tokenization = TokenizationDescription.parse(o.get(TokenizationDescription.FIELD));
      if (o.has("lowercase")) {
        Object stated = o.get("lowercase");
        if (!(stated instanceof Boolean) || (Boolean) stated != tokenization.lowercase()) {
          throw new IllegalArgumentException(
              "metadata.json lowercase: " + stated + " disagrees with tokenization (whose"
                  + " normalizer " + (tokenization.lowercase() ? "lowercases" : "keeps case")
                  + "). Re-export the model: one exporter writes both fields from the same"
                  + " tokenizer.");
        }
      }
      lowercase = tokenization.lowercase();
      stripAccents = tokenization.stripAccents();
    }
    String quantization = o.optString("quantization", "unknown");
    int vocabularySize = o.optInt("vocabulary_size", -1);
    int numSegments = o.optInt("num_segments", -1);
    JSONObject source = o.optJSONObject("source_model");
    JSONObject config = source == null ? null : source.optJSONObject("encoder_config");
    JSONObject contract = o.optJSONObject("input_contract");
    JSONObject segmentRule = contract == null ? null : contract.optJSONObject("segment_ids");
    if (segmentRule != null) {
      numSegments = segmentRule.getInt("max") + 1;
    } else if (numSegments < 0) {
      numSegments = config == null ? 2 : config.optInt("num_segments", 2);
      if (numSegments == 0) {
        numSegments = 2;
      }
    }
    String vocabularySha256 = o.has("vocabulary_sha256") ? o.getString("vocabulary_sha256") : null;
    String logits = o.optString("logits_output", "logits");
    JSONObject files = o.optJSONObject("files");
    JSONObject modelInfo = files == null ? null : files.optJSONObject(MODEL_FILE);
    long modelFileSize = modelInfo == null ? -1 : modelInfo.optLong("size", -1);
    List<String> ops = new ArrayList<String>();
    JSONArray opArray = modelInfo == null ? null : modelInfo.optJSONArray("ops");
    for (int i = 0; opArray != null && i < opArray.length(); i++) {
      ops.add(opArray.getString(i));
    }
    Map<String, String> summary = new LinkedHashMap<String, String>();
    Iterator<String> keys = o.keys();
    while (keys.hasNext()) {
      String k = keys.next();
      Object v = o.get(k);
      if (!(v instanceof JSONObject) && !(v instanceof JSONArray)) {
        summary.put(k, String.valueOf(v));
      } else if (v instanceof JSONArray && ((JSONArray) v).length() <= 16) {
        summary.put(k, v.toString());
      }
    }
    return new ModelMetadata(
        task,
        labels,
        signatures,
        lowercase,
        stripAccents,
        tokenization,
        quantization,
        vocabularySize,
        numSegments,
        logits,
        vocabularySha256,
        modelFileSize,
        ops,
        summary);
  }

  /**
   * Signatures of {@code model.tflite}: the exporter's {@code files["model.tflite"]} lists their
   * keys and lengths in the same order. Older or hand-written metadata may instead give a
   * top-level {@code "signatures"} (keys ending in {@code _L<length>}) or only {@code
   * "sequence_lengths"} (keys {@code serving_L<length>}, the exporter's naming rule).
   */
  private static List<Signature> signatures(JSONObject o) throws JSONException {
    List<Signature> out = new ArrayList<Signature>();
    JSONObject files = o.optJSONObject("files");
    JSONObject model = files == null ? null : files.optJSONObject(MODEL_FILE);
    JSONArray keys = null;
    JSONArray lengths = null;
    if (model != null) {
      keys = model.optJSONArray("signatures");
      lengths = model.optJSONArray("sequence_lengths");
    } else {
      keys = o.optJSONArray("signatures");
      lengths = o.optJSONArray("sequence_lengths");
    }
    if (keys != null) {
      if (lengths != null && lengths.length() != keys.length()) {
        throw new IllegalArgumentException(
            "metadata.json lists " + keys.length() + " signatures but " + lengths.length()
                + " sequence lengths. Re-export the model.");
      }
      for (int i = 0; i < keys.length(); i++) {
        String key = keys.getString(i);
        out.add(new Signature(key, lengths != null ? lengths.getInt(i) : lengthFromKey(key)));
      }
    } else if (lengths != null) {
      for (int i = 0; i < lengths.length(); i++) {
        out.add(new Signature("serving_L" + lengths.getInt(i), lengths.getInt(i)));
      }
    }
    if (out.isEmpty()) {
      throw new IllegalArgumentException(
          "metadata.json lists no signatures ('signatures' or 'sequence_lengths'). Export the"
              + " model with at least one sequence length.");
    }
    for (Signature sig : out) {
      if (sig.sequenceLength < 2) {
        throw new IllegalArgumentException(
            "Signature '" + sig.key + "' has sequence length " + sig.sequenceLength
                + "; it must be >= 2 (room for [CLS] and [SEP]).");
      }
    }
    Collections.sort(
        out,
        new java.util.Comparator<Signature>() {
          @Override
          public int compare(Signature a, Signature b) {
            return a.sequenceLength - b.sequenceLength;
          }
        });
    return out;
  }

  private static int lengthFromKey(String key) {
    int i = key.lastIndexOf("_L");
    if (i >= 0) {
      try {
        return Integer.parseInt(key.substring(i + 2));
      } catch (NumberFormatException ignored) {
        // Fall through to the error below.
      }
    }
    throw new IllegalArgumentException(
        "Cannot tell the sequence length of signature '" + key + "': the metadata gives none and"
            + " the key does not end in _L<length>. Re-export the model.");
  }

  private static String requireString(JSONObject o, String key) throws JSONException {
    if (!o.has(key) || o.isNull(key)) {
      throw new IllegalArgumentException(
          "metadata.json has no '" + key + "'. Copy the metadata.json the exporter wrote beside"
              + " model.tflite.");
    }
    return o.getString(key);
  }

  /** Sequence lengths of the signatures, ascending. */
  public int[] sequenceLengths() {
    int[] out = new int[signatures.size()];
    for (int i = 0; i < out.length; i++) {
      out[i] = signatures.get(i).sequenceLength;
    }
    return out;
  }
}
