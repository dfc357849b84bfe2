package org.tensorflow.lite;

/** Compile-only stub of LiteRT's {@code DataType} (see {@link Interpreter}). */
public enum DataType {
  FLOAT32,
  INT32,
  UINT8,
  INT64,
  STRING,
  BOOL,
  INT16,
  INT8
}
