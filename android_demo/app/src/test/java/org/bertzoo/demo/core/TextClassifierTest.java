package org.bertzoo.demo.core;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Collections;
import java.util.Map;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** The classifier's plumbing with a fake runtime: signature choice, inputs by name, checks. */
class TextClassifierTest {
  static final String METADATA =
      "{\"task\": \"classify\", \"labels\": [\"a\", \"b\", \"c\"], \"lowercase\": true,"
          + " \"files\": {\"model.tflite\": {\"signatures\": [\"serving_L8\", \"serving_L4\"],"
          + " \"sequence_lengths\": [8, 4]}}}";

  /** Returns fixed logits and records what it was given. */
  static final class FakeRunner implements SignatureRunner {
    String[] inputs = {"segment_ids", "token_ids", "padding_mask"}; // not alphabetical, not model order
    OutputTensor logits = OutputTensor.float32(new int[] {1, 3}, new float[] {0f, 2f, 1f});
    String lastKey;
    Map<String, int[]> lastInputs;

    @Override
    public String[] signatureKeys() {
      return new String[] {"serving_L4", "serving_L8"};
    }

    @Override
    public String[] inputNames(String key) {
      return inputs;
    }

    @Override
    public String[] outputNames(String key) {
      return new String[] {"logits", "probabilities"};
    }

    @Override
    public Map<String, OutputTensor> run(String key, Map<String, int[]> in) {
      lastKey = key;
      lastInputs = in;
      return Collections.singletonMap("logits", logits);
    }
  }

  static WordPieceTokenizer tok;

  @BeforeAll
  static void build() throws Exception {
    tok = TestFiles.tokenizer(WordPieceTokenizerTest.VOCAB);
  }

  @Test
  void picksTheShortestSignatureThatFits() {
    assertEquals(4, TextClassifier.chooseSequenceLength(4, new int[] {4, 8}));
    assertEquals(8, TextClassifier.chooseSequenceLength(5, new int[] {4, 8}));
    assertEquals(8, TextClassifier.chooseSequenceLength(50, new int[] {4, 8})); // truncated
  }

  @Test
  void classifiesThroughTheRunnerByName() throws Exception {
    FakeRunner runner = new FakeRunner();
    TextClassifier c = new TextClassifier(tok, ModelMetadata.parse(METADATA), runner);
    Prediction p = c.classify("hello world");
    assertEquals("serving_L4", runner.lastKey);
    assertArrayEquals(new int[] {2, 5, 6, 3}, runner.lastInputs.get("token_ids"));
    assertArrayEquals(new int[] {1, 1, 1, 1}, runner.lastInputs.get("padding_mask"));
    assertEquals("b", p.label);
    assertArrayEquals(new int[] {1, 2, 0}, p.ranking());
    assertEquals(4, p.numTokens);
    assertTrue(p.inferenceMillis >= 0 && p.totalMillis >= p.inferenceMillis);

    p = c.classify("hello world hello world hello world hello world");
    assertEquals("serving_L8", runner.lastKey);
    assertTrue(p.truncated);
  }

  @Test
  void quantizedLogitsAreDequantized() throws Exception {
    FakeRunner runner = new FakeRunner();
    runner.logits = OutputTensor.quantized(OutputTensor.Type.INT8, new int[] {1, 3}, new byte[] {10, -5, 20}, 0.1f, 0);
    Prediction p = new TextClassifier(tok, ModelMetadata.parse(METADATA), runner).classify("hello");
    assertEquals("c", p.label);
    assertEquals(2.0f, p.logits[2], 1e-6f);
  }

  @Test
  void mismatchedModelAndMetadataFailAtLoad() {
    FakeRunner runner = new FakeRunner();
    runner.inputs = new String[] {"input_ids", "attention_mask"};
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> new TextClassifier(tok, ModelMetadata.parse(METADATA), runner));
    assertTrue(e.getMessage().contains("'token_ids'"), e.getMessage());

    String other = METADATA.replace("serving_L8", "serving_L16").replace("[8, 4]", "[16, 4]");
    e = assertThrows(IllegalArgumentException.class,
        () -> new TextClassifier(tok, ModelMetadata.parse(other), new FakeRunner()));
    assertTrue(e.getMessage().contains("serving_L16"), e.getMessage());

    String qa = METADATA.replace("\"classify\"", "\"qa\"");
    e = assertThrows(IllegalArgumentException.class,
        () -> new TextClassifier(tok, ModelMetadata.parse(qa), new FakeRunner()));
    assertTrue(e.getMessage().contains("'qa'"), e.getMessage());

    String wrongVocab = METADATA.replace("\"lowercase\": true", "\"lowercase\": true, \"vocabulary_sha256\": \"00\"");
    e = assertThrows(IllegalArgumentException.class,
        () -> new TextClassifier(tok, ModelMetadata.parse(wrongVocab), new FakeRunner()));
    assertTrue(e.getMessage().contains("vocab.txt"), e.getMessage());
  }

  @Test
  void invalidInputsNeverReachTheRunner() throws Exception {
    FakeRunner runner = new FakeRunner();
    TextClassifier c = new TextClassifier(tok, ModelMetadata.parse(METADATA), runner);
    EncodedInput in = tok.encode("hello", 4);
    in.tokenIds[1] = 999;
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> c.run(in));
    assertTrue(e.getMessage().contains("token_ids[1] = 999"), e.getMessage());
    EncodedInput odd = tok.encode("hello", 6);
    e = assertThrows(IllegalArgumentException.class, () -> c.run(odd));
    assertTrue(e.getMessage().contains("sequence length 6"), e.getMessage());
    assertEquals(null, runner.lastKey);
  }

  @Test
  void encodedInputValidation() {
    EncodedInput in = tok.encode("hello", 4);
    in.paddingMask[3] = 1;
    in.paddingMask[2] = 0;
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> in.validate(30, 2, 4));
    assertTrue(e.getMessage().contains("after padding"), e.getMessage());
    EncodedInput seg = tok.encode("hello", 4);
    seg.segmentIds[0] = 2;
    e = assertThrows(IllegalArgumentException.class, () -> seg.validate(30, 2, 4));
    assertTrue(e.getMessage().contains("segment_ids[0] = 2"), e.getMessage());
  }
}
