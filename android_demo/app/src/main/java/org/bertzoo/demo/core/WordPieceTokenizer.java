package org.bertzoo.demo.core;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.Charset;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * BERT WordPiece tokenizer and packer, id for id equal to the project's Python {@code
 * WordPieceTokenizer} (and so to Hugging Face's {@code BertTokenizerFast}).
 *
 * <pre>
 *   WordPieceTokenizer tok = new WordPieceTokenizer(
 *       WordPieceTokenizer.readVocabulary(vocabStream), UnicodeTables.read(tablesStream), true);
 *   int[] pieces = tok.tokenize("Héllo, wörld!");         // [7592, 1010, 2088, 999]
 *   EncodedInput in = tok.encode("Héllo, wörld!", 128);    // [CLS] ... [SEP] [PAD]...
 * </pre>
 *
 * <p>Text a user types as "[CLS]" is ordinary text ("[", "cl", "##s", "]"), never the special id,
 * as on the Python side: text cannot inject separators or masks.
 */
public final class WordPieceTokenizer {
  public static final String SUFFIX_INDICATOR = "##";

  private final List<String> vocabulary;
  private final Map<String, Integer> tokenToId;
  private final BertNormalizer normalizer;
  private final int maxCharsPerWord;
  private final boolean lowercase;
  public final int clsId;
  public final int sepId;
  public final int padId;
  public final int unkId;
  public final int maskId;

  /** Uncased BERT ({@code lowercase} true strips accents too), special tokens spelled as usual. */
  public WordPieceTokenizer(List<String> vocabulary, UnicodeTables tables, boolean lowercase) {
    this(vocabulary, tables, lowercase, lowercase, 100);
  }

  /**
   * @param vocabulary tokens, index = id
   * @param tables the Unicode tables asset
   * @param lowercase lowercase text (uncased models)
   * @param stripAccents decompose and drop combining marks (uncased BERT: same as lowercase)
   * @param maxCharsPerWord a word longer than this many code points becomes [UNK]
   */
  public WordPieceTokenizer(
      List<String> vocabulary,
      UnicodeTables tables,
      boolean lowercase,
      boolean stripAccents,
      int maxCharsPerWord) {
    this(
        vocabulary, tables, lowercase, stripAccents, maxCharsPerWord, "[UNK]", "[CLS]", "[SEP]",
        "[PAD]", "[MASK]");
  }

  /**
   * The tokenizer a model's metadata asks for: its {@code tokenization} description when present
   * (refused by name when this tokenizer does not implement it exactly, see {@link
   * TokenizationDescription#requireAppImplements}), else BERT's rule with metadata's lowercase.
   */
  public static WordPieceTokenizer forModel(
      List<String> vocabulary, UnicodeTables tables, ModelMetadata metadata) {
    if (metadata.tokenization == null) {
      return new WordPieceTokenizer(
          vocabulary, tables, metadata.lowercase, metadata.stripAccents, 100);
    }
    return forDescription(vocabulary, tables, metadata.tokenization);
  }

  /** The tokenizer {@code description} specifies, as zoo's {@code wordpiece_arguments} maps it. */
  public static WordPieceTokenizer forDescription(
      List<String> vocabulary, UnicodeTables tables, TokenizationDescription description) {
    description.requireAppImplements();
    return new WordPieceTokenizer(
        vocabulary,
        tables,
        description.lowercase(),
        description.stripAccents(),
        description.maxWord,
        description.unkToken,
        description.cls,
        description.sep,
        description.pad == null ? "[PAD]" : description.pad,
        description.mask == null ? "[MASK]" : description.mask);
  }

  private WordPieceTokenizer(
      List<String> vocabulary,
      UnicodeTables tables,
      boolean lowercase,
      boolean stripAccents,
      int maxCharsPerWord,
      String unkToken,
      String clsToken,
      String sepToken,
      String padToken,
      String maskToken) {
    if (vocabulary == null || vocabulary.isEmpty()) {
      throw new IllegalArgumentException(
          "The vocabulary is empty. Pass the tokens of the model's vocab.txt"
              + " (WordPieceTokenizer.readVocabulary).");
    }
    if (maxCharsPerWord < 1) {
      throw new IllegalArgumentException(
          "maxCharsPerWord must be a positive int; received " + maxCharsPerWord + ".");
    }
    this.vocabulary = new ArrayList<String>(vocabulary);
    this.tokenToId = new HashMap<String, Integer>(vocabulary.size() * 2);
    // First occurrence wins if a vocabulary repeats a token, as in Python.
    for (int i = vocabulary.size() - 1; i >= 0; i--) {
      tokenToId.put(vocabulary.get(i), i);
    }
    this.normalizer = new BertNormalizer(tables, lowercase, stripAccents);
    this.maxCharsPerWord = maxCharsPerWord;
    this.lowercase = lowercase;
    this.clsId = special(clsToken);
    this.sepId = special(sepToken);
    this.padId = special(padToken);
    this.unkId = special(unkToken);
    this.maskId = special(maskToken);
  }

  private int special(String token) {
    Integer id = tokenToId.get(token);
    if (id == null) {
      throw new IllegalArgumentException(
          "Cannot find special token '"
              + token
              + "' in the vocabulary ("
              + vocabulary.size()
              + " tokens, first '"
              + vocabulary.get(0)
              + "'). Use the vocab.txt exported beside the model.");
    }
    return id;
  }

  /**
   * Reads a vocab.txt: one token per line, id = line number, UTF-8. Like Python's text mode,
   * "\r\n" and "\r" end lines too; a final empty line is not a token.
   */
  public static List<String> readVocabulary(InputStream in) throws IOException {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    byte[] buffer = new byte[1 << 16];
    int n;
    while ((n = in.read(buffer)) > 0) {
      bytes.write(buffer, 0, n);
    }
    String text = new String(bytes.toByteArray(), Charset.forName("UTF-8"));
    text = text.replace("\r\n", "\n").replace('\r', '\n');
    List<String> tokens = new ArrayList<String>();
    int start = 0;
    while (start <= text.length()) {
      int end = text.indexOf('\n', start);
      if (end < 0) {
        end = text.length();
      }
      tokens.add(text.substring(start, end));
      start = end + 1;
    }
    if (!tokens.isEmpty() && tokens.get(tokens.size() - 1).length() == 0) {
      tokens.remove(tokens.size() - 1);
    }
    return tokens;
  }

  public int vocabularySize() {
    return vocabulary.size();
  }

  public boolean lowercase() {
    return lowercase;
  }

  /**
   * sha256 of the vocabulary as the exporter writes vocab.txt (tokens joined by "\n", final
   * "\n"): {@code metadata.json}'s {@code vocabulary_sha256}, to catch a vocab.txt from another
   * model.
   */
  public String vocabularySha256() {
    try {
      MessageDigest digest = MessageDigest.getInstance("SHA-256");
      Charset utf8 = Charset.forName("UTF-8");
      byte[] newline = {'\n'};
      for (String token : vocabulary) {
        digest.update(token.getBytes(utf8));
        digest.update(newline);
      }
      StringBuilder hex = new StringBuilder();
      for (byte b : digest.digest()) {
        hex.append(Character.forDigit((b >> 4) & 0xF, 16)).append(Character.forDigit(b & 0xF, 16));
      }
      return hex.toString();
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("SHA-256 is not available", e);
    }
  }

  /** {@code 1037 -> "a"}. */
  public String idToToken(int id) {
    if (id < 0 || id >= vocabulary.size()) {
      throw new IndexOutOfBoundsException(
          "Token id " + id + " is outside the vocabulary (0 to " + (vocabulary.size() - 1) + ").");
    }
    return vocabulary.get(id);
  }

  /** Word-piece ids of {@code text}, without special tokens or truncation. */
  public int[] tokenize(String text) {
    if (text == null) {
      throw new IllegalArgumentException("text must be a String; received null.");
    }
    UnicodeTables.IntList out = new UnicodeTables.IntList(16);
    for (int[] word : normalizer.words(text)) {
      wordPieces(word, out);
    }
    return out.toArray();
  }

  /** Greedy longest-match-first WordPiece; a word with an unmatchable rest is one [UNK]. */
  private void wordPieces(int[] word, UnicodeTables.IntList out) {
    if (word.length > maxCharsPerWord) {
      out.add(unkId);
      return;
    }
    String s = new String(word, 0, word.length);
    // Offsets in chars of each code point boundary, so substrings never split a surrogate pair.
    int[] offsets = new int[word.length + 1];
    for (int i = 0; i < word.length; i++) {
      offsets[i + 1] = offsets[i] + Character.charCount(word[i]);
    }
    int mark = out.size;
    int start = 0;
    while (start < word.length) {
      int end = word.length;
      Integer found = null;
      while (end > start) {
        String piece = s.substring(offsets[start], offsets[end]);
        if (start > 0) {
          piece = SUFFIX_INDICATOR + piece;
        }
        found = tokenToId.get(piece);
        if (found != null) {
          break;
        }
        end--;
      }
      if (found == null) {
        out.size = mark;
        out.add(unkId);
        return;
      }
      out.add(found);
      start = end;
    }
  }

  /** {@code [CLS] text [SEP] [PAD]...}, truncated to {@code sequenceLength}. */
  public EncodedInput encode(String text, int sequenceLength) {
    return pack(tokenize(text), null, sequenceLength);
  }

  /** {@code [CLS] text [SEP] textB [SEP] [PAD]...}; {@code textB} may be null (single text). */
  public EncodedInput encode(String text, String textB, int sequenceLength) {
    return pack(tokenize(text), textB == null ? null : tokenize(textB), sequenceLength);
  }

  /**
   * Packs word pieces into fixed-length model inputs: a single text keeps its first {@code L - 2}
   * pieces; a pair is truncated like the Python side's {@code "longest_first"}.
   */
  public EncodedInput pack(int[] a, int[] b, int sequenceLength) {
    int minimum = b == null ? 2 : 3;
    if (sequenceLength < minimum) {
      throw new IllegalArgumentException(
          "sequenceLength must be >= "
              + minimum
              + " (room for "
              + (b == null ? "[CLS] A [SEP]" : "[CLS] A [SEP] B [SEP]")
              + "); received "
              + sequenceLength
              + ".");
    }
    int n1 = a.length;
    int n2 = b == null ? 0 : b.length;
    int l1 = n1;
    int l2 = n2;
    if (b == null) {
      l1 = Math.min(n1, sequenceLength - 2);
    } else {
      int budget = sequenceLength - 3;
      if (n1 + n2 > budget) {
        // longest_first as the reference (tokenizers' truncate_encodings) does it: a shorter
        // segment that fits in half the budget is kept whole and the longer gets the rest;
        // otherwise the shorter gets floor(budget / 2) and the longer the remainder, the first
        // segment counting as the shorter on a tie.
        int shorter = Math.min(n1, n2);
        boolean fits = 2 * shorter <= budget;
        int keepShorter = fits ? shorter : budget / 2;
        int keepLonger = fits ? budget - shorter : budget - budget / 2;
        boolean firstLonger = n1 > n2;
        l1 = firstLonger ? keepLonger : keepShorter;
        l2 = firstLonger ? keepShorter : keepLonger;
      }
    }
    int[] ids = new int[sequenceLength];
    int[] segments = new int[sequenceLength];
    int[] mask = new int[sequenceLength];
    int p = 0;
    ids[p++] = clsId;
    System.arraycopy(a, 0, ids, p, l1);
    p += l1;
    ids[p++] = sepId;
    if (b != null) {
      int segmentStart = p;
      System.arraycopy(b, 0, ids, p, l2);
      p += l2;
      ids[p++] = sepId;
      for (int i = segmentStart; i < p; i++) {
        segments[i] = 1;
      }
    }
    for (int i = 0; i < p; i++) {
      mask[i] = 1;
    }
    for (int i = p; i < sequenceLength; i++) {
      ids[i] = padId;
    }
    return new EncodedInput(ids, segments, mask, n1, n2, l1, l2);
  }
}
