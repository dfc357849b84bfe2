package org.bertzoo.demo.e2e;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.ByteArrayOutputStream;
import java.io.File;
import java.io.FileInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;
import org.bertzoo.demo.core.EncodedInput;
import org.bertzoo.demo.core.ModelMetadata;
import org.bertzoo.demo.core.OutputTensor;
import org.bertzoo.demo.core.Prediction;
import org.bertzoo.demo.core.TextClassifier;
import org.bertzoo.demo.core.UnicodeTables;
import org.bertzoo.demo.core.WordPieceTokenizer;
import org.json.JSONArray;
import org.json.JSONObject;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * End to end on the real exported model, without a phone: the Java tokenizer -> model.tflite run by
 * the LiteRT C library ({@code libLiteRt.so} from the ai-edge-litert wheel, through JNA) -> Java
 * post-processing, against the Python LiteRT interpreter on the same file ({@code
 * e2e_vectors.json}, >= 200 real BBC texts).
 *
 * <p>Needs {@code -Dbertzoo.vectors=DIR} (make_vectors.py output), {@code -Dbertzoo.litert=PATH}
 * (libLiteRt.so) and {@code -Dbertzoo.tables=PATH} (the app's bert_normalization.txt asset).
 */
class EndToEndTest {
  /** The bound for logits, Java+C library vs Python interpreter on the same file. */
  static final double LOGIT_TOLERANCE = 1e-5;

  private static JSONArray cases;
  private static ModelMetadata metadata;
  private static LiteRtJna runner;
  private static TextClassifier classifier;

  @BeforeAll
  static void load() throws Exception {
    File vectors = new File(property("bertzoo.vectors"));
    File modelDir = new File(vectors, "model");
    cases = new JSONObject(text(new File(vectors, "e2e_vectors.json"))).getJSONArray("cases");
    metadata = ModelMetadata.parse(text(new File(modelDir, "metadata.json")));
    UnicodeTables tables;
    InputStream in = new FileInputStream(property("bertzoo.tables"));
    try {
      tables = UnicodeTables.read(in);
    } finally {
      in.close();
    }
    in = new FileInputStream(new File(modelDir, "vocab.txt"));
    WordPieceTokenizer tokenizer;
    try {
      tokenizer = WordPieceTokenizer.forModel(WordPieceTokenizer.readVocabulary(in), tables, metadata);
    } finally {
      in.close();
    }
    runner = new LiteRtJna(property("bertzoo.litert"), new File(modelDir, "model.tflite").getPath());
    classifier = new TextClassifier(tokenizer, metadata, runner);
  }

  @AfterAll
  static void close() {
    if (runner != null) {
      runner.close();
    }
  }

  @Test
  void signaturesAreFixedLengthIdsInputs() {
    assertEquals(metadata.signatures.size(), runner.signatureKeys().length);
    for (ModelMetadata.Signature s : metadata.signatures) {
      Map<String, int[]> shapes = runner.inputShapes(s.key);
      assertEquals(3, shapes.size(), s.key + " inputs " + shapes.keySet());
      for (Map.Entry<String, int[]> e : shapes.entrySet()) {
        assertArrayEquals(new int[] {1, s.sequenceLength}, e.getValue(), s.key + "/" + e.getKey());
      }
      System.out.println("e2e: " + s.key + " inputs in file order " + Arrays.toString(runner.inputNames(s.key))
          + ", outputs " + Arrays.toString(runner.outputNames(s.key)));
    }
  }

  @Test
  void javaTokenIdsAndSignatureMatchPython() throws Exception {
    int[] perLength = new int[2];
    for (int i = 0; i < cases.length(); i++) {
      JSONObject c = cases.getJSONObject(i);
      EncodedInput in = classifier.encode(c.getString("text"), null);
      assertEquals(c.getInt("sequence_length"), in.sequenceLength(), "text " + i + ": signature length");
      assertArrayEquals(ints(c.getJSONArray("token_ids")), in.tokenIds, "text " + i + ": token ids");
      perLength[in.sequenceLength() == metadata.signatures.get(0).sequenceLength ? 0 : 1]++;
    }
    // Both signatures must be exercised: short headlines go to the short one.
    assertTrue(perLength[0] > 0 && perLength[1] > 0, "texts per signature " + Arrays.toString(perLength));
  }

  @Test
  void logitsAndLabelsMatchPythonLiteRt() throws Exception {
    assertTrue(cases.length() >= 200, "need >= 200 texts, have " + cases.length());
    double maxDiff = 0;
    double maxProbabilityDiff = 0;
    int agree = 0;
    double totalMillis = 0;
    for (int i = 0; i < cases.length(); i++) {
      JSONObject c = cases.getJSONObject(i);
      Prediction p = classifier.classify(c.getString("text"));
      totalMillis += p.inferenceMillis;
      JSONArray logits = c.getJSONArray("logits");
      JSONArray modelProbabilities = c.getJSONArray("model_probabilities");
      assertEquals(logits.length(), p.logits.length);
      for (int j = 0; j < p.logits.length; j++) {
        maxDiff = Math.max(maxDiff, Math.abs(p.logits[j] - logits.getDouble(j)));
        // The file's own softmax output, against the Java post-processing.
        maxProbabilityDiff = Math.max(maxProbabilityDiff, Math.abs(p.probabilities[j] - modelProbabilities.getDouble(j)));
      }
      if (p.label.equals(c.getString("label"))) {
        agree++;
      }
    }
    System.out.println(String.format(
        "e2e: %d BBC texts through libLiteRt.so via JNA: max |logit diff| vs Python LiteRT %.2e,"
            + " labels agree %d/%d, max |Java softmax - model probabilities| %.2e, mean inference %.1f ms",
        cases.length(), maxDiff, agree, cases.length(), maxProbabilityDiff, totalMillis / cases.length()));
    assertTrue(maxDiff <= LOGIT_TOLERANCE, "max |logit diff| " + maxDiff + " > " + LOGIT_TOLERANCE);
    assertEquals(cases.length(), agree, "labels that agree with Python");
    assertTrue(maxProbabilityDiff <= 1e-6, "Java softmax vs the model's probabilities: " + maxProbabilityDiff);
  }

  /** Inputs go in by name: a map in any order gives the same logits. */
  @Test
  void inputsAreFedByName() throws Exception {
    JSONObject c = cases.getJSONObject(0);
    EncodedInput in = classifier.encode(c.getString("text"), null);
    String key = "serving_L" + in.sequenceLength();
    Map<String, int[]> forward = new java.util.LinkedHashMap<String, int[]>();
    forward.put(EncodedInput.TOKEN_IDS, in.tokenIds);
    forward.put(EncodedInput.SEGMENT_IDS, in.segmentIds);
    forward.put(EncodedInput.PADDING_MASK, in.paddingMask);
    Map<String, int[]> backward = new java.util.LinkedHashMap<String, int[]>();
    backward.put(EncodedInput.PADDING_MASK, in.paddingMask);
    backward.put(EncodedInput.SEGMENT_IDS, in.segmentIds);
    backward.put(EncodedInput.TOKEN_IDS, in.tokenIds);
    float[] a = runner.run(key, forward).get("logits").dequantize();
    float[] b = runner.run(key, backward).get("logits").dequantize();
    assertArrayEquals(a, b, 0f);
  }

  /** A bad id is refused by the Java validation before it reaches the native runtime. */
  @Test
  void outOfRangeIdsNeverReachTheRuntime() {
    final EncodedInput in = classifier.encode("a short text", null);
    in.tokenIds[1] = metadata.vocabularySize;
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, new org.junit.jupiter.api.function.Executable() {
      @Override
      public void execute() throws Throwable {
        classifier.run(in);
      }
    });
    assertTrue(e.getMessage().contains("outside the model's vocabulary"), e.getMessage());
  }

  @Test
  void runnerRejectsAMissingInput() {
    final Map<String, int[]> inputs = new HashMap<String, int[]>();
    inputs.put(EncodedInput.TOKEN_IDS, new int[metadata.signatures.get(0).sequenceLength]);
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, new org.junit.jupiter.api.function.Executable() {
      @Override
      public void execute() throws Throwable {
        Map<String, OutputTensor> ignored = runner.run(metadata.signatures.get(0).key, inputs);
      }
    });
    assertTrue(e.getMessage().contains("no value for input"), e.getMessage());
  }

  private static String property(String name) {
    String value = System.getProperty(name);
    if (value == null) {
      fail("-D" + name + " is not set; run android_demo/scripts/android_test.sh");
    }
    return value;
  }

  private static String text(File f) throws IOException {
    InputStream in = new FileInputStream(f);
    try {
      ByteArrayOutputStream out = new ByteArrayOutputStream();
      byte[] buffer = new byte[1 << 16];
      int n;
      while ((n = in.read(buffer)) > 0) {
        out.write(buffer, 0, n);
      }
      return new String(out.toByteArray(), StandardCharsets.UTF_8);
    } finally {
      in.close();
    }
  }

  private static int[] ints(JSONArray a) throws Exception {
    int[] out = new int[a.length()];
    for (int i = 0; i < out.length; i++) {
      out[i] = a.getInt(i);
    }
    return out;
  }
}
