package org.bertzoo.demo.core;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayInputStream;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** The tokenizer's rules one at a time, on a small vocabulary (ids = positions below). */
class WordPieceTokenizerTest {
  static final String[] VOCAB = {
    "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", // 0-4
    "hello", "world", ",", "!", "un", // 5-9
    "##aff", "##able", "cafe", "中", "文", // 10-14
    "x", "##x", "[", "cl", "##s", // 15-19
    "]", "abcd", "hello" // 20-22: a repeated token keeps its first id
  };

  static WordPieceTokenizer tok;

  @BeforeAll
  static void build() throws Exception {
    tok = TestFiles.tokenizer(VOCAB);
  }

  @Test
  void lowercasesStripsAccentsAndSplitsPunctuation() {
    assertArrayEquals(new int[] {5, 7, 6, 8}, tok.tokenize("HÉLLO,wörld!"));
    assertArrayEquals(new int[] {12}, tok.tokenize("Café"));
    assertArrayEquals(new int[] {12}, tok.tokenize("Cafe\u0301")); // combining acute
  }

  @Test
  void greedyLongestMatchAndUnknownWords() {
    assertArrayEquals(new int[] {9, 10, 11}, tok.tokenize("unaffable"));
    // "unaffablez" has no piece for the rest: the whole word is one [UNK].
    assertArrayEquals(new int[] {1}, tok.tokenize("unaffablez"));
    assertArrayEquals(new int[] {5, 1, 6}, tok.tokenize("hello qqq world"));
  }

  @Test
  void wordLongerThanTheLimitIsUnknown() throws Exception {
    WordPieceTokenizer short5 =
        new WordPieceTokenizer(Arrays.asList(VOCAB), TestFiles.tables(), true, true, 5);
    assertArrayEquals(new int[] {15, 16, 16, 16, 16}, short5.tokenize("xxxxx"));
    assertArrayEquals(new int[] {1}, short5.tokenize("xxxxxx"));
    // The limit counts code points, not UTF-16 units or bytes: 5 emoji are 10 chars.
    assertArrayEquals(new int[] {1}, short5.tokenize("\ud83d\ude00\ud83d\ude00\ud83d\ude00\ud83d\ude00\ud83d\ude00x"));
  }

  @Test
  void cjkIdeographsAreWordsOfTheirOwn() {
    assertArrayEquals(new int[] {13, 14}, tok.tokenize("中文"));
    assertArrayEquals(new int[] {5, 13, 6}, tok.tokenize("hello中world"));
  }

  @Test
  void controlCharactersAreDroppedAndJoinTheWord() {
    assertArrayEquals(new int[] {21}, tok.tokenize("ab\u0000c\u200bd")); // NUL, zero-width space
    assertArrayEquals(new int[] {21}, tok.tokenize("ab\ufffdcd"));
    assertArrayEquals(new int[] {5, 6}, tok.tokenize("hello\u3000\tworld\n"));
    assertArrayEquals(new int[] {21}, tok.tokenize("ab\ud800cd")); // lone surrogate -> U+FFFD -> dropped
  }

  @Test
  void typedSpecialTokensAreText() {
    assertArrayEquals(new int[] {17, 18, 19, 20}, tok.tokenize("[CLS]"));
  }

  @Test
  void emptyAndBlankTexts() {
    assertEquals(0, tok.tokenize("").length);
    assertEquals(0, tok.tokenize(" \t\r\n").length);
    EncodedInput in = tok.encode("", 4);
    assertArrayEquals(new int[] {2, 3, 0, 0}, in.tokenIds);
    assertArrayEquals(new int[] {1, 1, 0, 0}, in.paddingMask);
  }

  @Test
  void casedTokenizerKeepsCaseAndAccents() throws Exception {
    WordPieceTokenizer cased =
        new WordPieceTokenizer(Arrays.asList("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "Café", "cafe"),
            TestFiles.tables(), false, false, 100);
    assertArrayEquals(new int[] {5}, cased.tokenize("Café"));
    assertArrayEquals(new int[] {1}, cased.tokenize("CAFE"));
  }

  @Test
  void singleTextIsTruncatedAndPadded() {
    EncodedInput in = tok.encode("hello world hello world", 5);
    assertArrayEquals(new int[] {2, 5, 6, 5, 3}, in.tokenIds);
    assertTrue(in.truncated());
    assertEquals(4, in.piecesA);
    assertEquals(3, in.keptA);
    in = tok.encode("hello", 6);
    assertArrayEquals(new int[] {2, 5, 3, 0, 0, 0}, in.tokenIds);
    assertArrayEquals(new int[] {0, 0, 0, 0, 0, 0}, in.segmentIds);
    assertArrayEquals(new int[] {1, 1, 1, 0, 0, 0}, in.paddingMask);
    assertFalse(in.truncated());
    assertEquals(3, in.numTokens());
  }

  @Test
  void pairsGetSegmentIdsAndLongestFirstTruncation() {
    int[] a = {15, 15, 15, 15, 15, 15};
    int[] b = {16, 16};
    EncodedInput in = tok.pack(a, b, 8); // budget 5: b (2) fits in half, a keeps 3
    assertArrayEquals(new int[] {2, 15, 15, 15, 3, 16, 16, 3}, in.tokenIds);
    assertArrayEquals(new int[] {0, 0, 0, 0, 0, 1, 1, 1}, in.segmentIds);
    in = tok.pack(new int[] {15, 15, 15, 15}, new int[] {16, 16, 16, 16}, 8); // tie: first is "shorter"
    assertEquals(2, in.keptA);
    assertEquals(3, in.keptB);
  }

  @Test
  void tooShortSequenceLengthIsAClearError() {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> tok.encode("hi", "there", 2));
    assertTrue(e.getMessage().contains(">= 3"), e.getMessage());
  }

  @Test
  void vocabularyFileParsing() throws Exception {
    byte[] text = "[PAD]\r\n[UNK]\n[CLS]\r[SEP]\n[MASK]\nhello\n".getBytes(StandardCharsets.UTF_8);
    List<String> tokens = WordPieceTokenizer.readVocabulary(new ByteArrayInputStream(text));
    assertEquals(Arrays.asList("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "hello"), tokens);
    assertEquals(5, tok.tokenize("hello")[0], "first occurrence of a repeated token wins");
    assertEquals("world", tok.idToToken(6));
    assertThrows(IndexOutOfBoundsException.class, () -> tok.idToToken(VOCAB.length));
  }

  @Test
  void missingSpecialTokenIsNamed() {
    IllegalArgumentException e =
        assertThrows(IllegalArgumentException.class,
            () -> new WordPieceTokenizer(Arrays.asList("[PAD]", "[UNK]", "[SEP]"), TestFiles.tables(), true));
    assertTrue(e.getMessage().contains("'[CLS]'"), e.getMessage());
  }

  @Test
  void vocabularySha256MatchesTheExportersRule() throws Exception {
    // sha256("a\nb\n"), the exporter's vocab.txt text for the tokens [a, b].
    WordPieceTokenizer t = new WordPieceTokenizer(
        Arrays.asList("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"), TestFiles.tables(), true);
    java.security.MessageDigest d = java.security.MessageDigest.getInstance("SHA-256");
    byte[] expected = d.digest("[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\n".getBytes(StandardCharsets.UTF_8));
    StringBuilder hex = new StringBuilder();
    for (byte x : expected) {
      hex.append(String.format("%02x", x));
    }
    assertEquals(hex.toString(), t.vocabularySha256());
  }
}
