package org.bertzoo.demo.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.File;
import java.io.FileInputStream;
import java.io.InputStream;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Iterator;
import java.util.List;
import org.json.JSONArray;
import org.json.JSONObject;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The Java core against the Python side's vectors ({@code android_demo/tools/make_vectors.py}):
 * token ids of real and hard texts from the project's own tokenizer, and post-processing.
 */
class PythonVectorsTest {
  private static JSONObject vectors;
  private static WordPieceTokenizer tokenizer;

  @BeforeAll
  static void load() throws Exception {
    File f = TestFiles.vectors("tokenizer_vectors.json");
    vectors = TestFiles.json(f);
    InputStream vocab = new FileInputStream(TestFiles.vectors("vocab.txt"));
    try {
      tokenizer =
          new WordPieceTokenizer(
              WordPieceTokenizer.readVocabulary(vocab),
              TestFiles.tables(),
              vectors.getBoolean("lowercase"),
              vectors.getBoolean("lowercase"),
              vectors.getInt("max_chars_per_word"));
    } finally {
      vocab.close();
    }
  }

  /** A vector file written from other sources than the checked-out ones must not pass. */
  @Test
  void vectorsAreCurrent() throws Exception {
    JSONObject sources = vectors.getJSONObject("sources_sha256");
    Iterator<String> keys = sources.keys();
    List<String> stale = new ArrayList<String>();
    while (keys.hasNext()) {
      String path = keys.next();
      File file = new File(TestFiles.repoRoot(), path);
      if (!file.isFile() || !TestFiles.sha256(file).equals(sources.getString(path))) {
        stale.add(path);
      }
    }
    assertTrue(stale.isEmpty(),
        "The tokenizer vectors are stale: " + stale + " changed since they were written. Rerun"
            + " android_demo/tools/make_vectors.py (android_demo/scripts/android_test.sh does).");
    assertEquals(vectors.getString("vocab_sha256"), TestFiles.sha256(TestFiles.vectors("vocab.txt")),
        "vocab.txt beside the vectors is not the one they were written with; rerun make_vectors.py.");
    assertEquals(tokenizer.vocabularySize(), vectors.getInt("vocabulary_size"));
  }

  /** The Java tables must be the ones the Python tokenizer uses. */
  @Test
  void unicodeTablesMatchPython() throws Exception {
    assertEquals(vectors.getString("unicode_tables_sha256"), TestFiles.sha256(TestFiles.tablesAsset()),
        "android_demo/app/src/main/assets/bert_normalization.txt differs from the Python"
            + " tokenizer's tables: run android_demo/tools/make_unicode_tables.py.");
  }

  @Test
  void enoughRealAndHardCases() throws Exception {
    int real = count("bbc") + count("austen") + count("wordnet");
    assertTrue(real >= 500, "need >= 500 real texts; the vectors hold " + real);
    assertTrue(count("hard") >= 30, "need the hard cases");
    assertTrue(count("random") >= 100, "need random code point strings");
    assertTrue(count("pair") >= 30, "need text pairs");
  }

  @ParameterizedTest(name = "tokenizer matches Python on {0} texts")
  @ValueSource(strings = {"bbc", "austen", "wordnet", "hard", "random", "pair"})
  void tokenizerMatchesPython(String source) throws Exception {
    JSONArray cases = vectors.getJSONArray("cases");
    int checked = 0;
    List<String> mismatches = new ArrayList<String>();
    for (int i = 0; i < cases.length(); i++) {
      JSONObject c = cases.getJSONObject(i);
      if (!c.getString("source").equals(source)) {
        continue;
      }
      checked++;
      String text = c.getString("text");
      String textB = c.has("text_b") ? c.getString("text_b") : null;
      int[] pieces = tokenizer.tokenize(text);
      EncodedInput in = tokenizer.encode(text, textB, c.getInt("sequence_length"));
      String problem = null;
      if (!Arrays.equals(pieces, ints(c.getJSONArray("pieces")))) {
        problem = "pieces " + diff(pieces, ints(c.getJSONArray("pieces")));
      } else if (!Arrays.equals(in.tokenIds, ints(c.getJSONArray("token_ids")))) {
        problem = "token_ids " + diff(in.tokenIds, ints(c.getJSONArray("token_ids")));
      } else if (!Arrays.equals(in.segmentIds, ints(c.getJSONArray("segment_ids")))) {
        problem = "segment_ids differ";
      } else if (!Arrays.equals(in.paddingMask, ints(c.getJSONArray("padding_mask")))) {
        problem = "padding_mask differs";
      }
      if (problem != null) {
        mismatches.add("case " + i + " " + quote(text) + ": " + problem);
      }
    }
    System.out.println("tokenizer parity [" + source + "]: " + checked + " texts, "
        + mismatches.size() + " mismatches");
    assertTrue(checked > 0, "no '" + source + "' cases in the vectors");
    if (!mismatches.isEmpty()) {
      fail(mismatches.size() + " of " + checked + " '" + source + "' texts tokenize differently from"
          + " Python; first: " + mismatches.subList(0, Math.min(3, mismatches.size())));
    }
  }

  @Test
  void postProcessingMatchesNumpy() throws Exception {
    JSONArray cases = TestFiles.json(TestFiles.vectors("postprocess_vectors.json")).getJSONArray("cases");
    for (int i = 0; i < cases.length(); i++) {
      JSONObject c = cases.getJSONObject(i);
      JSONArray v = c.getJSONArray("values");
      int n = v.length();
      OutputTensor t;
      String type = c.getString("type");
      if (type.equals("float32")) {
        float[] f = new float[n];
        for (int j = 0; j < n; j++) {
          f[j] = (float) v.getDouble(j);
        }
        t = OutputTensor.float32(new int[] {1, n}, f);
      } else {
        byte[] b = new byte[n];
        for (int j = 0; j < n; j++) {
          b[j] = (byte) v.getInt(j);
        }
        OutputTensor.Type tt = type.equals("int8") ? OutputTensor.Type.INT8 : OutputTensor.Type.UINT8;
        t = OutputTensor.quantized(tt, new int[] {1, n}, b, (float) c.getDouble("scale"), c.getInt("zero_point"));
        JSONArray expected = c.getJSONArray("dequantized");
        float[] real = t.dequantize();
        for (int j = 0; j < n; j++) {
          assertEquals(expected.getDouble(j), real[j], 1e-6 * Math.max(1, Math.abs(expected.getDouble(j))),
              "case " + i + " dequantized[" + j + "]");
        }
      }
      float[] logits = PostProcessor.logits(t, n);
      float[] p = PostProcessor.softmax(logits);
      JSONArray expected = c.getJSONArray("probabilities");
      for (int j = 0; j < n; j++) {
        assertEquals(expected.getDouble(j), p[j], 1e-6, "case " + i + " probability[" + j + "]");
      }
      assertEquals(c.getInt("argmax"), PostProcessor.argmax(logits), "case " + i + " argmax");
    }
  }

  /** Labels and probabilities of the Python LiteRT run, recomputed from its logits in Java. */
  @Test
  void labelsFromPythonLogits() throws Exception {
    String dir = System.getProperty("bertzoo.vectors");
    File e2e = new File(dir == null ? "." : dir, "e2e_vectors.json");
    org.junit.jupiter.api.Assumptions.assumeTrue(e2e.isFile(), "no e2e vectors (make_vectors.py --skip-model)");
    JSONObject v = TestFiles.json(TestFiles.vectors("e2e_vectors.json"));
    ModelMetadata metadata = ModelMetadata.parse(new String(
        TestFiles.read(TestFiles.vectors("model/metadata.json")), java.nio.charset.StandardCharsets.UTF_8));
    JSONArray cases = v.getJSONArray("cases");
    for (int i = 0; i < cases.length(); i++) {
      JSONObject c = cases.getJSONObject(i);
      float[] logits = floats(c.getJSONArray("logits"));
      float[] p = PostProcessor.softmax(logits);
      JSONArray expected = c.getJSONArray("probabilities");
      for (int j = 0; j < p.length; j++) {
        assertEquals(expected.getDouble(j), p[j], 1e-6, "text " + i + " probability[" + j + "]");
      }
      assertEquals(c.getString("label"), metadata.labels.get(PostProcessor.argmax(logits)), "text " + i);
    }
  }

  private int count(String source) throws Exception {
    JSONArray cases = vectors.getJSONArray("cases");
    int n = 0;
    for (int i = 0; i < cases.length(); i++) {
      if (cases.getJSONObject(i).getString("source").equals(source)) {
        n++;
      }
    }
    return n;
  }

  static int[] ints(JSONArray a) throws Exception {
    int[] out = new int[a.length()];
    for (int i = 0; i < out.length; i++) {
      out[i] = a.getInt(i);
    }
    return out;
  }

  static float[] floats(JSONArray a) throws Exception {
    float[] out = new float[a.length()];
    for (int i = 0; i < out.length; i++) {
      out[i] = (float) a.getDouble(i);
    }
    return out;
  }

  private static String diff(int[] got, int[] want) {
    int i = 0;
    while (i < got.length && i < want.length && got[i] == want[i]) {
      i++;
    }
    return "differ at " + i + ": java " + slice(got, i) + " python " + slice(want, i);
  }

  private static String slice(int[] a, int from) {
    return Arrays.toString(Arrays.copyOfRange(a, Math.min(from, a.length), Math.min(from + 5, a.length)));
  }

  private static String quote(String s) {
    StringBuilder b = new StringBuilder("\"");
    for (int i = 0; i < s.length() && i < 60; i++) {
      char c = s.charAt(i);
      if (c < 0x20 || c > 0x7e) {
        b.append(String.format("\\u%04x", (int) c));
      } else {
        b.append(c);
      }
    }
    return b.append(s.length() > 60 ? "...\"" : "\"").toString();
  }
}
