package org.bertzoo.demo.core;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.FileInputStream;
import java.io.InputStream;
import java.util.List;
import org.json.JSONArray;
import org.json.JSONObject;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * metadata.json's {@code tokenization} description: the app's tokenizer built from it gives the
 * Python tokenizer's ids for every flag combination of BERT's rule, and refuses every other
 * stage or step by name.
 */
class TokenizationDescriptionTest {
  /** zoo.text.description.wordpiece(lowercase=True), as the exporter writes it. */
  static JSONObject bert() throws Exception {
    return new JSONObject(
        "{\"version\": 1, \"normalizer\": [{\"type\": \"bert_clean\"}, {\"type\": \"cjk_spacing\"},"
            + " {\"type\": \"strip_accents\"}, {\"type\": \"lowercase\"}],"
            + " \"pre_tokenizer\": {\"type\": \"bert\"}, \"word_normalizer\": [],"
            + " \"model\": {\"type\": \"WordPiece\", \"unk_token\": \"[UNK]\", \"prefix\": \"##\","
            + " \"max_word\": 100, \"max_word_unit\": \"characters\"},"
            + " \"post_processor\": {\"type\": \"bert\", \"cls\": \"[CLS]\", \"sep\": \"[SEP]\","
            + " \"pad\": \"[PAD]\", \"mask\": \"[MASK]\"}}");
  }

  static String metadata(Object lowercase, JSONObject tokenization) throws Exception {
    JSONObject o = new JSONObject();
    o.put("task", "classify");
    o.put("labels", new JSONArray("[\"a\", \"b\"]"));
    o.put("sequence_lengths", new JSONArray("[64]"));
    if (lowercase != null) {
      o.put("lowercase", lowercase);
    }
    if (tokenization != null) {
      o.put("tokenization", tokenization);
    }
    return o.toString();
  }

  static String refusal(JSONObject description) {
    IllegalArgumentException e =
        assertThrows(
            IllegalArgumentException.class,
            () -> TokenizationDescription.parse(description).requireAppImplements());
    return e.getMessage();
  }

  /** Every flag combination the Python side wrote: same ids on every probe sentence. */
  @Test
  void sameIdsAsPythonOnProbes() throws Exception {
    JSONObject vectors = TestFiles.json(TestFiles.vectors("tokenizer_vectors.json"));
    List<String> vocabulary;
    InputStream in = new FileInputStream(TestFiles.vectors("vocab.txt"));
    try {
      vocabulary = WordPieceTokenizer.readVocabulary(in);
    } finally {
      in.close();
    }
    JSONArray combos = vectors.getJSONArray("descriptions");
    assertEquals(4, combos.length());
    int checked = 0;
    int differing = 0;
    for (int c = 0; c < combos.length(); c++) {
      JSONObject combo = combos.getJSONObject(c);
      TokenizationDescription d = TokenizationDescription.parse(combo.getJSONObject("description"));
      WordPieceTokenizer tok = WordPieceTokenizer.forDescription(vocabulary, TestFiles.tables(), d);
      assertEquals(d.lowercase(), tok.lowercase());
      JSONArray texts = combo.getJSONArray("texts");
      JSONArray ids = combo.getJSONArray("ids");
      assertTrue(texts.length() >= 20, "probe sentences: " + texts.length());
      for (int i = 0; i < texts.length(); i++) {
        JSONArray row = ids.getJSONArray(i);
        int[] expected = new int[row.length()];
        for (int k = 0; k < expected.length; k++) {
          expected[k] = row.getInt(k);
        }
        assertArrayEquals(expected, tok.tokenize(texts.getString(i)), c + ": " + texts.getString(i));
        checked++;
      }
      if (c > 0) {
        JSONArray first = combos.getJSONObject(0).getJSONArray("ids");
        differing += first.toString().equals(ids.toString()) ? 0 : 1;
      }
    }
    assertTrue(checked > 80, "checked " + checked);
    // The flags matter on the probes (accents, case): a test that could not tell them apart
    // would not check the mapping.
    assertEquals(3, differing);
  }

  @Test
  void metadataTakesFlagsFromTheDescription() throws Exception {
    JSONObject d = bert();
    d.getJSONArray("normalizer").remove(2); // lowercase without strip_accents
    ModelMetadata m = ModelMetadata.parse(metadata(true, d));
    assertTrue(m.lowercase);
    assertFalse(m.stripAccents);
    assertEquals(100, m.tokenization.maxWord);
  }

  @Test
  void olderMetadataReadsLowercaseOnly() throws Exception {
    ModelMetadata m = ModelMetadata.parse(metadata(false, null));
    assertNull(m.tokenization);
    assertFalse(m.lowercase);
    assertFalse(m.stripAccents);
  }

  @Test
  void disagreementIsRefused() throws Exception {
    IllegalArgumentException e =
        assertThrows(
            IllegalArgumentException.class, () -> ModelMetadata.parse(metadata(false, bert())));
    assertTrue(e.getMessage().contains("lowercase: false disagrees with tokenization"), e.getMessage());
  }

  @ParameterizedTest
  @CsvSource(
      delimiter = '|',
      value = {
        "version|2|tokenization.version: 2",
        "normalizer|[{\"type\": \"nfkx\"}]|tokenization.normalizer[0].type: 'nfkx'",
        "normalizer|[{\"type\": \"nfc\", \"x\": 1}]|tokenization.normalizer[0]:",
        "word_normalizer|{}|tokenization.word_normalizer:",
        "extra|1|tokenization.extra: not a field",
        "post_processor|{\"type\": \"bert\", \"cls\": \"\", \"sep\": \"[SEP]\"}|tokenization.post_processor.cls: ''",
        "model|{\"type\": \"WordPiece\", \"unk_token\": \"[UNK]\", \"prefix\": \"##\", \"max_word\": 0, \"max_word_unit\": \"characters\"}|tokenization.model.max_word: 0",
        "model|{\"type\": \"WordPiece\", \"unk_token\": \"[UNK]\", \"prefix\": \"@@\", \"max_word\": 9, \"max_word_unit\": \"characters\"}|tokenization.model.prefix: '@@'",
        "model|{\"type\": \"WordPiece\", \"prefix\": \"##\", \"max_word\": 9, \"max_word_unit\": \"characters\"}|tokenization.model.unk_token: missing",
        "model|{\"type\": \"WordPiece\", \"unk_token\": \"[UNK]\", \"prefix\": \"##\", \"max_word\": 9, \"max_word_unit\": \"characters\", \"x\": 1}|tokenization.model.x: not a field",
        "pre_tokenizer|{\"type\": \"bert\", \"add_prefix_space\": true}|tokenization.pre_tokenizer.add_prefix_space: only for byte_level",
      })
  void malformedFieldsAreNamed(String field, String json, String expected) throws Exception {
    JSONObject d = bert();
    d.put(field, new JSONObject("{\"v\": " + json + "}").get("v"));
    IllegalArgumentException e =
        assertThrows(IllegalArgumentException.class, () -> TokenizationDescription.parse(d));
    assertTrue(e.getMessage().contains(expected), e.getMessage());
    // The app opens the model through ModelMetadata, which gives the same message.
    IllegalArgumentException viaMetadata =
        assertThrows(
            IllegalArgumentException.class, () -> ModelMetadata.parse(metadata(null, d)));
    assertTrue(viaMetadata.getMessage().contains(expected), viaMetadata.getMessage());
  }

  @ParameterizedTest
  @CsvSource(
      delimiter = '|',
      value = {
        "normalizer|[{\"type\": \"bert_clean\"}, {\"type\": \"cjk_spacing\"}, {\"type\": \"nfkc_casefold\"}]|tokenization.normalizer[2]: nfkc_casefold (keras-hub's case folding) is not implemented",
        "normalizer|[{\"type\": \"nfc\"}, {\"type\": \"bert_clean\"}, {\"type\": \"cjk_spacing\"}]|tokenization.normalizer[0]: nfc (a Unicode normal form) is not implemented",
        "normalizer|[{\"type\": \"bert_clean\"}, {\"type\": \"cjk_spacing\"}, {\"type\": \"nfkc\"}]|tokenization.normalizer[2]: nfkc",
        "normalizer|[{\"type\": \"nfd\"}, {\"type\": \"bert_clean\"}, {\"type\": \"cjk_spacing\"}]|tokenization.normalizer[0]: nfd",
        "normalizer|[{\"type\": \"nfkd\"}, {\"type\": \"bert_clean\"}, {\"type\": \"cjk_spacing\"}]|tokenization.normalizer[0]: nfkd",
        "normalizer|[{\"type\": \"bert_clean\"}]|has no cjk_spacing",
        "normalizer|[{\"type\": \"cjk_spacing\"}]|only after step bert_clean",
        "normalizer|[{\"type\": \"bert_clean\"}, {\"type\": \"cjk_spacing\"}, {\"type\": \"lowercase\"}, {\"type\": \"strip_accents\"}]|in the order bert_clean, cjk_spacing, strip_accents, lowercase",
        "word_normalizer|[{\"type\": \"nfkc_casefold\"}]|tokenization.word_normalizer[0]: nfkc_casefold (keras-hub's case folding) is not implemented",
        "pre_tokenizer|{\"type\": \"keras_hub_bert\"}|tokenization.pre_tokenizer.type: keras_hub_bert",
        "pre_tokenizer|{\"type\": \"byte_level\", \"add_prefix_space\": false}|tokenization.pre_tokenizer.type: byte_level",
        "pre_tokenizer|{\"type\": \"metaspace\"}|tokenization.pre_tokenizer.type: metaspace",
        "model|{\"type\": \"WordPiece\", \"unk_token\": \"[UNK]\", \"prefix\": \"##\", \"max_word\": 100, \"max_word_unit\": \"bytes\"}|tokenization.model.max_word_unit: bytes",
        "model|{\"type\": \"BPE\", \"unk_token\": \"<unk>\"}|tokenization.model.type: BPE is not implemented",
        "model|{\"type\": \"Unigram\", \"unk_token\": \"<unk>\"}|tokenization.model.type: Unigram is not implemented",
      })
  void unsupportedStepsAreRefusedByName(String field, String json, String expected)
      throws Exception {
    JSONObject d = bert();
    d.put(field, new JSONObject("{\"v\": " + json + "}").get("v"));
    String message = refusal(d);
    assertTrue(message.contains(expected), message);
    assertTrue(message.contains("export a model whose tokenizer uses BERT's rule"), message);
  }

  /** The same refusal when the app opens the model (ModelRepository -> forModel). */
  @Test
  void openingTheModelRefuses() throws Exception {
    JSONObject d = bert();
    d.put("word_normalizer", new JSONArray("[{\"type\": \"nfkc_casefold\"}]"));
    ModelMetadata m = ModelMetadata.parse(metadata(true, d));
    List<String> vocab = java.util.Arrays.asList("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]");
    IllegalArgumentException e =
        assertThrows(
            IllegalArgumentException.class,
            () -> WordPieceTokenizer.forModel(vocab, TestFiles.tables(), m));
    assertTrue(e.getMessage().startsWith("metadata.json tokenization.word_normalizer[0]: nfkc_casefold"), e.getMessage());
  }

  /** Special tokens come from the description. */
  @Test
  void specialTokensFromTheDescription() throws Exception {
    JSONObject d = bert();
    d.put("post_processor", new JSONObject("{\"type\": \"bert\", \"cls\": \"<c>\", \"sep\": \"<s>\"}"));
    d.getJSONObject("model").put("unk_token", "<u>");
    List<String> vocab = java.util.Arrays.asList("[PAD]", "<u>", "<c>", "<s>", "[MASK]", "a");
    WordPieceTokenizer tok =
        WordPieceTokenizer.forDescription(vocab, TestFiles.tables(), TokenizationDescription.parse(d));
    assertEquals(2, tok.clsId);
    assertEquals(3, tok.sepId);
    assertEquals(1, tok.unkId);
    assertArrayEquals(new int[] {5, 1}, tok.tokenize("a b"));
  }
}
