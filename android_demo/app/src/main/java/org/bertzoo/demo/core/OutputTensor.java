package org.bertzoo.demo.core;

/**
 * A model output as the runtime returns it: float32 values, or int8/uint8 values with the
 * tensor's affine quantization ({@code real = scale * (q - zeroPoint)}).
 */
public final class OutputTensor {
  /** Element types the post-processing understands. */
  public enum Type {
    FLOAT32,
    INT8,
    UINT8
  }

  public final Type type;
  public final int[] shape;
  private final float[] floats;
  private final byte[] bytes;
  public final float scale;
  public final int zeroPoint;

  private OutputTensor(Type type, int[] shape, float[] floats, byte[] bytes, float scale, int zeroPoint) {
    this.type = type;
    this.shape = shape;
    this.floats = floats;
    this.bytes = bytes;
    this.scale = scale;
    this.zeroPoint = zeroPoint;
  }

  public static OutputTensor float32(int[] shape, float[] values) {
    checkSize(shape, values.length);
    return new OutputTensor(Type.FLOAT32, shape, values.clone(), null, 1f, 0);
  }

  /** An int8 or uint8 output with its quantization parameters. */
  public static OutputTensor quantized(Type type, int[] shape, byte[] values, float scale, int zeroPoint) {
    if (type == Type.FLOAT32) {
      throw new IllegalArgumentException("quantized() takes INT8 or UINT8; use float32() for floats.");
    }
    if (!(scale > 0f) || Float.isInfinite(scale)) {
      throw new IllegalArgumentException(
          "A quantized output needs a positive finite scale; received "
              + scale
              + ". The tensor has no per-tensor quantization: re-export the model, or read"
              + " it as float32.");
    }
    checkSize(shape, values.length);
    return new OutputTensor(type, shape, null, values.clone(), scale, zeroPoint);
  }

  private static void checkSize(int[] shape, int n) {
    long size = 1;
    for (int d : shape) {
      size *= d;
    }
    if (size != n) {
      throw new IllegalArgumentException(
          "An output of shape " + java.util.Arrays.toString(shape) + " needs " + size + " values; received " + n + ".");
    }
  }

  public int size() {
    return floats != null ? floats.length : bytes.length;
  }

  /** Real values: a copy of the floats, or the dequantized integers. */
  public float[] dequantize() {
    if (type == Type.FLOAT32) {
      return floats.clone();
    }
    float[] out = new float[bytes.length];
    for (int i = 0; i < bytes.length; i++) {
      int q = type == Type.INT8 ? bytes[i] : (bytes[i] & 0xFF);
      out[i] = scale * (q - zeroPoint);
    }
    return out;
  }
}
