package org.bertzoo.demo.core;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.nio.charset.Charset;
import java.util.HashMap;
import java.util.Map;

/**
 * The Unicode tables of BERT normalization, read from the {@code bert_normalization.txt} asset.
 *
 * <p>They are the Python tokenizer's own tables ({@code zoo/text/normalization_tables.py}, measured
 * on Hugging Face's {@code BertTokenizerFast}), written for Java by {@code
 * android_demo/tools/make_unicode_tables.py}. Shipping them, rather than calling {@link
 * Character} or {@link java.text.Normalizer}, keeps the ids identical to Python on every phone:
 * Android's Unicode version changes with the OS release.
 */
public final class UnicodeTables {
  /** Map kinds, as in {@code make_normalization_tables.py}. */
  static final int OFFSET = 0;

  static final int DROP = 1;
  static final int SEQUENCE = 2;
  static final int PAD = 3;
  static final int HANGUL = 4;

  /** Pre-tokenizer classes. */
  static final int OTHER = 0;

  static final int WHITESPACE = 1;
  static final int PUNCTUATION = 2;

  private static final int FORMAT_VERSION = 1;

  private final Map<String, CharMap> maps;
  private final Map<String, ValueTable> values;
  /** Version of the reference {@code tokenizers} library the tables were measured on. */
  public final String tokenizersVersion;

  private UnicodeTables(String tokenizersVersion, Map<String, CharMap> maps, Map<String, ValueTable> values) {
    this.tokenizersVersion = tokenizersVersion;
    this.maps = maps;
    this.values = values;
  }

  /**
   * Reads the tables; the stream is read to its end but not closed. Every table of the Python
   * module is there under its own name ({@link #map}, {@link #values}).
   *
   * @throws IOException if the stream fails
   * @throws IllegalArgumentException if the text is not a tables file this class can read
   */
  public static UnicodeTables read(InputStream in) throws IOException {
    Parser p = new Parser(new BufferedReader(new InputStreamReader(in, Charset.forName("UTF-8"))));
    String[] header = p.next();
    if (header.length != 2
        || !header[0].equals("bert-normalization")
        || !header[1].equals(String.valueOf(FORMAT_VERSION))) {
      throw p.error(
          "expected the header 'bert-normalization " + FORMAT_VERSION + "'",
          join(header),
          "regenerate the asset with android_demo/tools/make_unicode_tables.py");
    }
    String[] version = p.next();
    if (version.length != 2 || !version[0].equals("tokenizers")) {
      throw p.error("expected 'tokenizers <version>'", join(version), null);
    }
    Map<String, CharMap> maps = new HashMap<String, CharMap>();
    Map<String, ValueTable> values = new HashMap<String, ValueTable>();
    String[] line;
    while ((line = p.nextOrNull()) != null) {
      if (line.length == 4 && line[0].equals("map")) {
        maps.put(line[1], p.charMap(line));
      } else if (line.length == 3 && line[0].equals("values")) {
        values.put(line[1], p.valueTable(line));
      } else {
        throw p.error("expected 'map <NAME> <ranges> <sequences>' or 'values <NAME> <ranges>'", join(line), null);
      }
    }
    return new UnicodeTables(version[1], maps, values);
  }

  /** The per-code-point map {@code name} (e.g. CLEAN_NFD). */
  CharMap map(String name) {
    CharMap m = maps.get(name);
    if (m == null) {
      throw missing("map", name, maps.keySet());
    }
    return m;
  }

  /** The value table {@code name} (COMBINING_CLASS, PRE_TOKENIZER_CLASS). */
  ValueTable values(String name) {
    ValueTable v = values.get(name);
    if (v == null) {
      throw missing("value table", name, values.keySet());
    }
    return v;
  }

  private static IllegalArgumentException missing(String what, String name, java.util.Set<String> have) {
    return new IllegalArgumentException(
        "The Unicode tables (bert_normalization.txt) have no " + what + " " + name + "; they hold "
            + new java.util.TreeSet<String>(have) + ". The asset and the app come from different"
            + " versions: regenerate it with android_demo/tools/make_unicode_tables.py.");
  }

  /** Largest {@code i} with {@code starts[i] <= cp}; {@code starts[0]} is 0 in every table. */
  static int rangeIndex(int[] starts, int cp) {
    int lo = 0;
    int hi = starts.length - 1;
    while (lo < hi) {
      int mid = (lo + hi + 1) >>> 1;
      if (starts[mid] <= cp) {
        lo = mid;
      } else {
        hi = mid - 1;
      }
    }
    return lo;
  }

  /** A per-code-point map {@code cp -> 0..n code points}, stored as ranges. */
  static final class CharMap {
    final int[] starts;
    final int[] kinds;
    final int[] args;
    final int[][] sequences;

    CharMap(int[] starts, int[] kinds, int[] args, int[][] sequences) {
      this.starts = starts;
      this.kinds = kinds;
      this.args = args;
      this.sequences = sequences;
    }

    /** Appends the image of {@code cp} to {@code out}. */
    void map(int cp, IntList out) {
      int i = rangeIndex(starts, cp);
      switch (kinds[i]) {
        case OFFSET:
          out.add(cp + args[i]);
          break;
        case DROP:
          break;
        case PAD:
          // BERT's spaces around a CJK ideograph.
          out.add(' ');
          out.add(cp + args[i]);
          out.add(' ');
          break;
        case HANGUL:
          // Unicode's algorithmic decomposition of a precomposed Hangul syllable.
          int s = cp - 0xAC00;
          out.add(0x1100 + s / 588);
          out.add(0x1161 + (s % 588) / 28);
          if (s % 28 != 0) {
            out.add(0x11A7 + s % 28);
          }
          break;
        case SEQUENCE:
          out.addAll(sequences[args[i]]);
          break;
        default:
          throw new IllegalStateException("unknown map kind " + kinds[i]);
      }
    }

    int[] apply(int[] codePoints) {
      IntList out = new IntList(codePoints.length + 8);
      for (int cp : codePoints) {
        map(cp, out);
      }
      return out.toArray();
    }
  }

  /** A run-length encoded {@code cp -> int} table. */
  static final class ValueTable {
    final int[] starts;
    final int[] values;

    ValueTable(int[] starts, int[] values) {
      this.starts = starts;
      this.values = values;
    }

    int get(int cp) {
      return values[rangeIndex(starts, cp)];
    }
  }

  private static String join(String[] parts) {
    StringBuilder b = new StringBuilder();
    for (int i = 0; i < parts.length; i++) {
      if (i > 0) {
        b.append(' ');
      }
      b.append(parts[i]);
    }
    return b.toString();
  }

  /** Line-oriented reader of the asset with line numbers in its errors. */
  private static final class Parser {
    private final BufferedReader reader;
    private int lineNumber;

    Parser(BufferedReader reader) {
      this.reader = reader;
    }

    String[] nextOrNull() throws IOException {
      String line;
      while ((line = reader.readLine()) != null) {
        lineNumber++;
        line = line.trim();
        if (line.length() > 0 && line.charAt(0) != '#') {
          return line.split(" ");
        }
      }
      return null;
    }

    String[] next() throws IOException {
      String[] parts = nextOrNull();
      if (parts == null) {
        throw error("unexpected end of file", "nothing", "the asset is truncated; regenerate it");
      }
      return parts;
    }

    int[] ints(int count) throws IOException {
      String[] parts = next();
      if (parts.length != count) {
        throw error("expected " + count + " integers", join(parts), null);
      }
      int[] out = new int[count];
      for (int i = 0; i < count; i++) {
        try {
          out[i] = Integer.parseInt(parts[i]);
        } catch (NumberFormatException e) {
          throw error("expected an integer", parts[i], null);
        }
      }
      return out;
    }

    int[] counts(String[] header) {
      int[] out = new int[header.length - 2];
      for (int i = 0; i < out.length; i++) {
        try {
          out[i] = Integer.parseInt(header[2 + i]);
        } catch (NumberFormatException e) {
          throw error("expected a count", header[2 + i], null);
        }
      }
      return out;
    }

    CharMap charMap(String[] header) throws IOException {
      String name = header[1];
      int[] counts = counts(header);
      int n = counts[0];
      int[] starts = new int[n];
      int[] kinds = new int[n];
      int[] args = new int[n];
      for (int i = 0; i < n; i++) {
        int[] row = ints(3);
        starts[i] = row[0];
        kinds[i] = row[1];
        args[i] = row[2];
        if (kinds[i] < OFFSET || kinds[i] > HANGUL) {
          throw error("expected a map kind 0-4", String.valueOf(kinds[i]), null);
        }
        if (kinds[i] == SEQUENCE && (args[i] < 0 || args[i] >= counts[1])) {
          throw error("sequence index out of range", String.valueOf(args[i]), null);
        }
      }
      checkStarts(starts, name);
      int[][] sequences = new int[counts[1]][];
      for (int i = 0; i < counts[1]; i++) {
        String[] parts = next();
        if (parts.length < 2 || !parts[0].equals("seq")) {
          throw error("expected 'seq <code points>'", join(parts), null);
        }
        sequences[i] = new int[parts.length - 1];
        for (int j = 1; j < parts.length; j++) {
          sequences[i][j - 1] = Integer.parseInt(parts[j]);
        }
      }
      return new CharMap(starts, kinds, args, sequences);
    }

    ValueTable valueTable(String[] header) throws IOException {
      String name = header[1];
      int n = counts(header)[0];
      int[] starts = new int[n];
      int[] values = new int[n];
      for (int i = 0; i < n; i++) {
        int[] row = ints(2);
        starts[i] = row[0];
        values[i] = row[1];
      }
      checkStarts(starts, name);
      return new ValueTable(starts, values);
    }

    void checkStarts(int[] starts, String name) {
      if (starts.length == 0 || starts[0] != 0) {
        throw error("table " + name + " must start at code point 0", "another start", null);
      }
      for (int i = 1; i < starts.length; i++) {
        if (starts[i] <= starts[i - 1]) {
          throw error("table " + name + " must have increasing starts", String.valueOf(starts[i]), null);
        }
      }
    }

    IllegalArgumentException error(String expected, String received, String todo) {
      return new IllegalArgumentException(
          "Cannot read the Unicode tables (bert_normalization.txt), line "
              + lineNumber
              + ": "
              + expected
              + "; received '"
              + received
              + "'. "
              + (todo != null ? todo : "Regenerate the asset with android_demo/tools/make_unicode_tables.py")
              + ".");
    }
  }

  /** A growable int array (no boxing: tokenizing a long article touches ~10^4 code points). */
  static final class IntList {
    int[] data;
    int size;

    IntList(int capacity) {
      data = new int[Math.max(capacity, 4)];
    }

    void add(int v) {
      if (size == data.length) {
        int[] bigger = new int[data.length * 2];
        System.arraycopy(data, 0, bigger, 0, size);
        data = bigger;
      }
      data[size++] = v;
    }

    void addAll(int[] vs) {
      for (int v : vs) {
        add(v);
      }
    }

    int[] toArray() {
      int[] out = new int[size];
      System.arraycopy(data, 0, out, 0, size);
      return out;
    }
  }
}
