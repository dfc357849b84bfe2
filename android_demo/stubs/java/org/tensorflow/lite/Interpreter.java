package org.tensorflow.lite;

import java.nio.ByteBuffer;
import java.util.Map;

/**
 * Compile-only stub of the LiteRT {@code Interpreter} (AAR {@code com.google.ai.edge.litert:litert}),
 * with exactly the members the app calls and their signatures in LiteRT's Java API. It lets
 * {@code android_demo/scripts/build_apk.sh} compile the app where Google's Maven repository cannot
 * be reached; it is never packaged (the Gradle build uses the real AAR).
 */
public final class Interpreter {
  /** Stub of {@code Interpreter.Options}. */
  public static class Options {
    public Options() {}

    public Options setNumThreads(int numThreads) {
      throw new UnsupportedOperationException("stub");
    }
  }

  public Interpreter(ByteBuffer byteBuffer, Options options) {
    throw new UnsupportedOperationException("stub");
  }

  public String[] getSignatureKeys() {
    throw new UnsupportedOperationException("stub");
  }

  public String[] getSignatureInputs(String signatureKey) {
    throw new UnsupportedOperationException("stub");
  }

  public String[] getSignatureOutputs(String signatureKey) {
    throw new UnsupportedOperationException("stub");
  }

  public Tensor getInputTensorFromSignature(String inputName, String signatureKey) {
    throw new UnsupportedOperationException("stub");
  }

  public Tensor getOutputTensorFromSignature(String outputName, String signatureKey) {
    throw new UnsupportedOperationException("stub");
  }

  public void runSignature(Map<String, Object> inputs, Map<String, Object> outputs, String signatureKey) {
    throw new UnsupportedOperationException("stub");
  }

  public void close() {
    throw new UnsupportedOperationException("stub");
  }
}
