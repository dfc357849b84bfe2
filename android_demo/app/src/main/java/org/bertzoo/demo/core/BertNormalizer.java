package org.bertzoo.demo.core;

import java.util.ArrayList;
import java.util.List;

/**
 * BERT's text normalization and word splitting, the Java twin of {@code zoo/text/normalization.py}.
 *
 * <p>The reference is Hugging Face's {@code BertTokenizerFast}, which does, in this order:
 *
 * <ol>
 *   <li>clean: drop U+0000, U+FFFD and control/format/private-use characters (keeping tab, newline,
 *       carriage return), map whitespace to a space;
 *   <li>put spaces around CJK ideographs, so each becomes a word;
 *   <li>if stripping accents: NFD (decompose, then stable-sort each run of combining marks by
 *       canonical combining class), then drop the marks;
 *   <li>if lowercasing: lowercase each character;
 *   <li>split into words at whitespace and around each punctuation character.
 * </ol>
 *
 * <p>Every step is a table lookup per code point ({@link UnicodeTables}), exactly as the Python
 * side does it with TensorFlow ops, so the two agree code point for code point.
 */
public final class BertNormalizer {
  private final UnicodeTables.CharMap clean;
  private final UnicodeTables.CharMap cleanNfd;
  private final UnicodeTables.CharMap lowercaseMap;
  private final UnicodeTables.CharMap afterOrdering;
  private final UnicodeTables.ValueTable combiningClass;
  private final UnicodeTables.ValueTable preTokenizerClass;
  private final boolean lowercase;
  private final boolean stripAccents;

  public BertNormalizer(UnicodeTables tables, boolean lowercase, boolean stripAccents) {
    if (tables == null) {
      throw new IllegalArgumentException(
          "BertNormalizer needs the Unicode tables; received null. Load them with"
              + " UnicodeTables.read(<the bert_normalization.txt asset>).");
    }
    this.lowercase = lowercase;
    this.stripAccents = stripAccents;
    // The same tables as zoo/text/normalization.py, which fuses steps that follow each other
    // per character: cleaning+NFD before the canonical ordering, stripping+lowercasing after.
    this.clean = tables.map("CLEAN");
    this.cleanNfd = tables.map("CLEAN_NFD");
    this.lowercaseMap = tables.map("LOWERCASE");
    this.afterOrdering = tables.map(lowercase ? "STRIP_ACCENTS_LOWERCASE" : "STRIP_ACCENTS");
    this.combiningClass = tables.values("COMBINING_CLASS");
    this.preTokenizerClass = tables.values("PRE_TOKENIZER_CLASS");
  }

  /**
   * The code points of {@code text}. A lone surrogate (possible in a Java string, impossible in
   * UTF-8) becomes U+FFFD, as the Python side's {@code unicode_decode(errors="replace")} does with
   * bytes it cannot decode; cleaning then drops it.
   */
  static int[] codePoints(String text) {
    UnicodeTables.IntList out = new UnicodeTables.IntList(text.length());
    int i = 0;
    while (i < text.length()) {
      char c = text.charAt(i);
      if (Character.isHighSurrogate(c)
          && i + 1 < text.length()
          && Character.isLowSurrogate(text.charAt(i + 1))) {
        out.add(Character.toCodePoint(c, text.charAt(i + 1)));
        i += 2;
      } else {
        boolean lone = Character.isHighSurrogate(c) || Character.isLowSurrogate(c);
        out.add(lone ? 0xFFFD : c);
        i += 1;
      }
    }
    return out.toArray();
  }

  /** Steps 1-4: the normalized code points of {@code text}. */
  public int[] normalize(String text) {
    int[] cps = codePoints(text);
    if (!stripAccents) {
      cps = clean.apply(cps);
      return lowercase ? lowercaseMap.apply(cps) : cps;
    }
    cps = cleanNfd.apply(cps);
    canonicalOrder(cps);
    return afterOrdering.apply(cps);
  }

  /**
   * NFD's canonical ordering, in place: stable-sort each run of non-zero-class marks by class.
   * Needed for parity: the reference strips accents after ordering, and some marks it keeps (e.g.
   * U+1D16D, class 226) move past others. A run starts at each class-0 character and at the start
   * of the text.
   */
  void canonicalOrder(int[] cps) {
    int n = cps.length;
    int[] ccc = new int[n];
    for (int i = 0; i < n; i++) {
      ccc[i] = combiningClass.get(cps[i]);
    }
    int start = 0;
    while (start < n) {
      int end = start + 1;
      while (end < n && ccc[end] != 0) {
        end++;
      }
      // Insertion sort by class keeps equal classes in text order (stable); runs are short.
      for (int i = start + 1; i < end; i++) {
        int cp = cps[i];
        int cls = ccc[i];
        int j = i - 1;
        while (j >= start && ccc[j] > cls) {
          cps[j + 1] = cps[j];
          ccc[j + 1] = ccc[j];
          j--;
        }
        cps[j + 1] = cp;
        ccc[j + 1] = cls;
      }
      start = end;
    }
  }

  /**
   * Step 5: split normalized code points into words. A word is a maximal run of characters that
   * are neither whitespace nor punctuation, or a single punctuation character.
   */
  public List<int[]> splitWords(int[] cps) {
    List<int[]> words = new ArrayList<int[]>();
    int wordStart = -1;
    int previous = UnicodeTables.WHITESPACE;
    for (int i = 0; i < cps.length; i++) {
      int cls = preTokenizerClass.get(cps[i]);
      boolean startsWord =
          cls != UnicodeTables.WHITESPACE
              && (cls == UnicodeTables.PUNCTUATION || previous != UnicodeTables.OTHER);
      if (wordStart >= 0 && (startsWord || cls == UnicodeTables.WHITESPACE)) {
        words.add(slice(cps, wordStart, i));
        wordStart = -1;
      }
      if (startsWord) {
        wordStart = i;
      }
      previous = cls;
    }
    if (wordStart >= 0) {
      words.add(slice(cps, wordStart, cps.length));
    }
    return words;
  }

  /** Steps 1-5 on one text. */
  public List<int[]> words(String text) {
    return splitWords(normalize(text));
  }

  private static int[] slice(int[] a, int from, int to) {
    int[] out = new int[to - from];
    System.arraycopy(a, from, out, 0, to - from);
    return out;
  }
}
