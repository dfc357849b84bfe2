package org.tensorflow.lite;

/** Compile-only stub of LiteRT's {@code Tensor} (see {@link Interpreter}). */
public interface Tensor {
  /** Stub of {@code Tensor.QuantizationParams}. */
  class QuantizationParams {
    public QuantizationParams(float scale, int zeroPoint) {}

    public float getScale() {
      throw new UnsupportedOperationException("stub");
    }

    public int getZeroPoint() {
      throw new UnsupportedOperationException("stub");
    }
  }

  DataType dataType();

  int numDimensions();

  int numBytes();

  int numElements();

  int[] shape();

  String name();

  QuantizationParams quantizationParams();
}
