package org.bertzoo.demo.core;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

class ModelMetadataTest {
  /** The layout export/tflite/ writes (trimmed). */
  static final String EXPORTED =
      "{\"format\": \"zoo-export\", \"format_version\": 2, \"task\": \"classify\", \"labels\": [\"neg\", \"pos\"],"
          + " \"lowercase\": true, \"vocabulary_size\": 30522, \"vocabulary_sha256\": \"ab\","
          + " \"quantization\": \"dynamic_int8\", \"sequence_lengths\": [128, 64],"
          + " \"source_model\": {\"encoder_config\": {\"num_segments\": 2}},"
          + " \"files\": {\"model.tflite\": {\"signatures\": [\"serving_L128\", \"serving_L64\"],"
          + " \"sequence_lengths\": [128, 64], \"size\": 23000000, \"ops\": [\"ADD\", \"GELU\"]}}}";

  @Test
  void parsesTheExportersMetadata() {
    ModelMetadata m = ModelMetadata.parse(EXPORTED);
    assertEquals("classify", m.task);
    assertEquals(2, m.labels.size());
    assertArrayEquals(new int[] {64, 128}, m.sequenceLengths()); // sorted, shortest first
    assertEquals("serving_L64", m.signatures.get(0).key);
    assertEquals("dynamic_int8", m.quantization);
    assertEquals(30522, m.vocabularySize);
    assertEquals(2, m.numSegments);
    assertEquals(23000000L, m.modelFileSize);
    assertEquals("ab", m.vocabularySha256);
    assertEquals("dynamic_int8", m.summary.get("quantization"));
  }

  @Test
  void formatOneTaskNamesAreRead() {
    ModelMetadata m = ModelMetadata.parse(EXPORTED.replace("\"classify\"", "\"classification\""));
    assertEquals("classify", m.task);
  }

  @Test
  void segmentRangeComesFromTheInputContract() {
    // A DistilBERT-style student records num_segments 0 and ignores segments: 0 and 1 pass.
    ModelMetadata distil = ModelMetadata.parse(
        EXPORTED.replace("{\"num_segments\": 2}", "{\"num_segments\": 0}"));
    assertEquals(2, distil.numSegments);
    ModelMetadata contract = ModelMetadata.parse(EXPORTED.replace("\"source_model\"",
        "\"input_contract\": {\"segment_ids\": {\"min\": 0, \"max\": 0}}, \"source_model\""));
    assertEquals(1, contract.numSegments);
  }

  @Test
  void lengthsAloneFollowTheNamingRule() {
    ModelMetadata m = ModelMetadata.parse("{\"task\": \"classify\", \"labels\": [\"a\"], \"sequence_lengths\": [32]}");
    assertEquals("serving_L32", m.signatures.get(0).key);
  }

  @Test
  void missingFieldsAreNamed() {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> ModelMetadata.parse("{\"task\": \"classify\", \"sequence_lengths\": [32]}"));
    assertTrue(e.getMessage().contains("'labels'"), e.getMessage());
    e = assertThrows(IllegalArgumentException.class,
        () -> ModelMetadata.parse("{\"task\": \"classify\", \"labels\": [\"a\"]}"));
    assertTrue(e.getMessage().contains("no signatures"), e.getMessage());
    e = assertThrows(IllegalArgumentException.class,
        () -> ModelMetadata.parse("{\"task\": \"regress\", \"labels\": null,"
            + " \"sequence_lengths\": [32]}"));
    assertTrue(e.getMessage().contains("'regress' model"), e.getMessage());
    e = assertThrows(IllegalArgumentException.class, () -> ModelMetadata.parse("not json"));
    assertTrue(e.getMessage().contains("not a JSON object"), e.getMessage());
  }
}
