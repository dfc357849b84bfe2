package org.bertzoo.demo.core;

import static org.junit.jupiter.api.Assertions.fail;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.ByteArrayOutputStream;
import java.io.File;
import java.io.FileInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Arrays;
import java.util.List;
import org.json.JSONObject;

/**
 * Where the tests find their files.
 *
 * <p>{@code -Dbertzoo.vectors=DIR}: the Python side's vectors ({@code make_vectors.py}). {@code
 * android_test.sh} always sets it, and then a missing file fails; a plain {@code ./gradlew test}
 * without it skips the vector tests. {@code -Dbertzoo.repo=DIR}: the repository root (default:
 * found from the working directory).
 */
final class TestFiles {
  private TestFiles() {}

  private static UnicodeTables tables;

  static File repoRoot() {
    String property = System.getProperty("bertzoo.repo");
    if (property != null) {
      return new File(property);
    }
    File dir = new File(System.getProperty("user.dir")).getAbsoluteFile();
    while (dir != null && !new File(dir, "android_demo/app/src/main/assets").isDirectory()) {
      dir = dir.getParentFile();
    }
    if (dir == null) {
      fail("Cannot find the repository root from " + System.getProperty("user.dir")
          + "; pass -Dbertzoo.repo=<root>.");
    }
    return dir;
  }

  static File tablesAsset() {
    return new File(repoRoot(), "android_demo/app/src/main/assets/bert_normalization.txt");
  }

  static synchronized UnicodeTables tables() throws IOException {
    if (tables == null) {
      InputStream in = new FileInputStream(tablesAsset());
      try {
        tables = UnicodeTables.read(in);
      } finally {
        in.close();
      }
    }
    return tables;
  }

  /** A tokenizer over a small vocabulary, for unit tests. */
  static WordPieceTokenizer tokenizer(String... tokens) throws IOException {
    List<String> vocab = Arrays.asList(tokens);
    return new WordPieceTokenizer(vocab, tables(), true);
  }

  /** The vectors directory, or skips the test when the run did not ask for vectors. */
  static File vectors(String name) {
    String dir = System.getProperty("bertzoo.vectors");
    assumeTrue(dir != null, "no -Dbertzoo.vectors: run android_demo/scripts/android_test.sh");
    File f = new File(dir, name);
    if (!f.isFile()) {
      fail(f + " is missing: run android_demo/tools/make_vectors.py " + dir
          + " (android_test.sh does) before the JVM tests.");
    }
    return f;
  }

  static byte[] read(File f) throws IOException {
    InputStream in = new FileInputStream(f);
    try {
      ByteArrayOutputStream out = new ByteArrayOutputStream();
      byte[] buffer = new byte[1 << 16];
      int n;
      while ((n = in.read(buffer)) > 0) {
        out.write(buffer, 0, n);
      }
      return out.toByteArray();
    } finally {
      in.close();
    }
  }

  static JSONObject json(File f) throws Exception {
    return new JSONObject(new String(read(f), StandardCharsets.UTF_8));
  }

  static String sha256(File f) throws IOException {
    try {
      byte[] digest = MessageDigest.getInstance("SHA-256").digest(read(f));
      StringBuilder b = new StringBuilder();
      for (byte x : digest) {
        b.append(String.format("%02x", x));
      }
      return b.toString();
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }
}
