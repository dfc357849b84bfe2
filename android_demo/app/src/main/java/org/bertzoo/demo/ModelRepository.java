package org.bertzoo.demo;

import android.content.Context;
import android.content.res.AssetFileDescriptor;
import android.content.res.AssetManager;
import android.os.Handler;
import android.os.Looper;
import java.io.ByteArrayOutputStream;
import java.io.FileInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import org.bertzoo.demo.core.ModelMetadata;
import org.bertzoo.demo.core.Prediction;
import org.bertzoo.demo.core.TextClassifier;
import org.bertzoo.demo.core.UnicodeTables;
import org.bertzoo.demo.core.WordPieceTokenizer;

/**
 * The model, loaded once per process from the APK's assets, and the one background thread that
 * uses it. The exporter writes {@code model.tflite}, {@code vocab.txt} and {@code metadata.json};
 * {@code bert_normalization.txt} ships with the app (the tokenizer's Unicode tables).
 *
 * <p>One thread because the LiteRT Interpreter is not thread-safe, and because loading and
 * inference must stay off the UI thread.
 */
final class ModelRepository {
  static final String MODEL = "model.tflite";
  static final String VOCABULARY = "vocab.txt";
  static final String METADATA = "metadata.json";
  static final String TABLES = "bert_normalization.txt";

  /** Result of a background job, delivered on the UI thread. */
  interface Callback<T> {
    void onResult(T result, Throwable error);
  }

  private static final ExecutorService WORKER = Executors.newSingleThreadExecutor();
  private static final Handler MAIN = new Handler(Looper.getMainLooper());
  private static TextClassifier classifier; // touched on the worker thread only
  private static volatile long modelBytes;

  private ModelRepository() {}

  /** Loads the model if needed (on the worker thread); {@code callback} gets the classifier. */
  static void load(Context context, final Callback<TextClassifier> callback) {
    final Context app = context.getApplicationContext();
    WORKER.execute(
        new Runnable() {
          @Override
          public void run() {
            TextClassifier result = null;
            Throwable error = null;
            try {
              result = loadOnWorker(app);
            } catch (Throwable t) {
              error = t;
            }
            deliver(callback, result, error);
          }
        });
  }

  /** Classifies {@code text} on the worker thread. */
  static void classify(final String text, final Callback<Prediction> callback) {
    WORKER.execute(
        new Runnable() {
          @Override
          public void run() {
            Prediction result = null;
            Throwable error = null;
            try {
              if (classifier == null) {
                throw new IllegalStateException("The model is not loaded.");
              }
              result = classifier.classify(text);
            } catch (Throwable t) {
              error = t;
            }
            deliver(callback, result, error);
          }
        });
  }

  static long modelBytes() {
    return modelBytes;
  }

  private static <T> void deliver(final Callback<T> callback, final T result, final Throwable error) {
    MAIN.post(
        new Runnable() {
          @Override
          public void run() {
            callback.onResult(result, error);
          }
        });
  }

  private static TextClassifier loadOnWorker(Context context) throws IOException {
    if (classifier != null) {
      return classifier;
    }
    AssetManager assets = context.getAssets();
    UnicodeTables tables;
    InputStream in = assets.open(TABLES);
    try {
      tables = UnicodeTables.read(in);
    } finally {
      in.close();
    }
    ModelMetadata metadata = ModelMetadata.parse(readText(assets, METADATA));
    List<String> vocabulary;
    in = assets.open(VOCABULARY);
    try {
      vocabulary = WordPieceTokenizer.readVocabulary(in);
    } finally {
      in.close();
    }
    // Implements metadata's tokenization description, or refuses it naming the field and step
    // (the message reaches the user as the error text: MainActivity.describe).
    WordPieceTokenizer tokenizer = WordPieceTokenizer.forModel(vocabulary, tables, metadata);
    MappedByteBuffer model = map(assets, MODEL);
    int threads = Math.max(1, Math.min(4, Runtime.getRuntime().availableProcessors()));
    InterpreterSignatureRunner runner = new InterpreterSignatureRunner(model, threads);
    classifier = new TextClassifier(tokenizer, metadata, runner);
    return classifier;
  }

  /**
   * Memory-maps an asset. {@code openFd} only works on an asset stored uncompressed in the APK,
   * which {@code androidResources.noCompress += "tflite"} guarantees for the model.
   */
  private static MappedByteBuffer map(AssetManager assets, String name) throws IOException {
    AssetFileDescriptor fd;
    try {
      fd = assets.openFd(name);
    } catch (IOException e) {
      throw new IOException(
          name + " cannot be memory-mapped: it is missing from the APK's assets or stored"
              + " compressed. Copy the exporter's files into app/src/main/assets and keep"
              + " androidResources { noCompress += \"tflite\" }.", e);
    }
    try {
      FileInputStream stream = new FileInputStream(fd.getFileDescriptor());
      try {
        modelBytes = fd.getDeclaredLength();
        return stream.getChannel().map(FileChannel.MapMode.READ_ONLY, fd.getStartOffset(), fd.getDeclaredLength());
      } finally {
        stream.close(); // the mapping outlives the stream
      }
    } finally {
      fd.close();
    }
  }

  private static String readText(AssetManager assets, String name) throws IOException {
    InputStream in = assets.open(name);
    try {
      ByteArrayOutputStream out = new ByteArrayOutputStream();
      byte[] buffer = new byte[8192];
      int n;
      while ((n = in.read(buffer)) > 0) {
        out.write(buffer, 0, n);
      }
      return new String(out.toByteArray(), "UTF-8");
    } finally {
      in.close();
    }
  }
}
