package org.bertzoo.demo.core;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayInputStream;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/** The shipped tables and the normalizer steps they drive. */
class UnicodeTablesTest {
  @Test
  void assetLoadsAndCoversKnownCodePoints() throws Exception {
    UnicodeTables t = TestFiles.tables();
    assertTrue(t.tokenizersVersion.length() > 0);
    assertEquals(230, t.values("COMBINING_CLASS").get(0x0301)); // combining acute
    assertEquals(UnicodeTables.PUNCTUATION, t.values("PRE_TOKENIZER_CLASS").get('!'));
    assertEquals(UnicodeTables.PUNCTUATION, t.values("PRE_TOKENIZER_CLASS").get('$')); // BERT: any ASCII symbol
    assertEquals(UnicodeTables.WHITESPACE, t.values("PRE_TOKENIZER_CLASS").get(0x3000));
    assertEquals(UnicodeTables.OTHER, t.values("PRE_TOKENIZER_CLASS").get('a'));
  }

  @Test
  void normalizerSteps() throws Exception {
    BertNormalizer n = new BertNormalizer(TestFiles.tables(), true, true);
    assertArrayEquals(cps("hello world  中  文 "), n.normalize("Héllo\u0000 Wörld 中文"));
    assertArrayEquals(cps("istanbul"), n.normalize("İstanbul")); // NFD: I + dot above, dot dropped
    BertNormalizer lowerOnly = new BertNormalizer(TestFiles.tables(), true, false);
    assertArrayEquals(cps("i\u0307stanbul"), lowerOnly.normalize("İstanbul")); // lowercase: 2 code points
    assertArrayEquals(cps("\u1100\u1161\u11a8"), n.normalize("\uac01")); // Hangul decomposes
    // Canonical order: a class-220 mark moves before a class-230 one; stripping then drops both.
    assertArrayEquals(cps("q"), n.normalize("q\u0307\u0323"));
    BertNormalizer keep = new BertNormalizer(TestFiles.tables(), false, false);
    assertArrayEquals(cps("Héllo"), keep.normalize("Héllo"));
  }

  @Test
  void malformedTablesFailWithTheLine() throws Exception {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> UnicodeTables.read(new ByteArrayInputStream("# c\nnot-the-header 1\n".getBytes(StandardCharsets.UTF_8))));
    assertTrue(e.getMessage().contains("line 2"), e.getMessage());
    e = assertThrows(IllegalArgumentException.class,
        () -> UnicodeTables.read(new ByteArrayInputStream("bert-normalization 1\ntokenizers x\nmap CLEAN 2 0\n0 0 0\n".getBytes(StandardCharsets.UTF_8))));
    assertTrue(e.getMessage().contains("truncated"), e.getMessage());
    // A tables file without a map the normalizer needs names it.
    UnicodeTables partial = UnicodeTables.read(new ByteArrayInputStream(
        "bert-normalization 1\ntokenizers x\nmap CLEAN 1 0\n0 0 0\nvalues COMBINING_CLASS 1\n0 0\n".getBytes(StandardCharsets.UTF_8)));
    e = assertThrows(IllegalArgumentException.class, () -> new BertNormalizer(partial, true, true));
    assertTrue(e.getMessage().contains("CLEAN_NFD"), e.getMessage());
  }

  private static int[] cps(String s) {
    return BertNormalizer.codePoints(s);
  }
}
