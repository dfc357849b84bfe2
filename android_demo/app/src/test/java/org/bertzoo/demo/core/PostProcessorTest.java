package org.bertzoo.demo.core;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

class PostProcessorTest {
  @Test
  void softmaxIsStableForLargeLogits() {
    float[] p = PostProcessor.softmax(new float[] {1000f, 999f, -1000f});
    assertEquals(1.0, p[0] + p[1] + p[2], 1e-6);
    assertEquals(1 / (1 + Math.exp(-1)), p[0], 1e-6);
    assertEquals(0f, p[2]);
  }

  @Test
  void argmaxTakesTheFirstOnATie() {
    assertEquals(1, PostProcessor.argmax(new float[] {0f, 2f, 2f}));
  }

  @Test
  void nanLogitIsAnError() {
    IllegalArgumentException e =
        assertThrows(IllegalArgumentException.class, () -> PostProcessor.softmax(new float[] {0f, Float.NaN}));
    assertTrue(e.getMessage().contains("NaN"));
  }

  @Test
  void int8AndUint8Dequantize() {
    OutputTensor t = OutputTensor.quantized(OutputTensor.Type.INT8, new int[] {1, 3}, new byte[] {-128, 0, 127}, 0.5f, -10);
    assertArrayEquals(new float[] {-59f, 5f, 68.5f}, PostProcessor.logits(t, 3), 0f);
    OutputTensor u = OutputTensor.quantized(OutputTensor.Type.UINT8, new int[] {2}, new byte[] {(byte) 255, 0}, 0.1f, 128);
    assertArrayEquals(new float[] {12.7f, -12.8f}, u.dequantize(), 1e-5f);
  }

  @Test
  void badQuantizationAndShapesAreErrors() {
    assertThrows(IllegalArgumentException.class,
        () -> OutputTensor.quantized(OutputTensor.Type.INT8, new int[] {1, 2}, new byte[2], 0f, 0));
    assertThrows(IllegalArgumentException.class, () -> OutputTensor.float32(new int[] {1, 3}, new float[2]));
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> PostProcessor.logits(OutputTensor.float32(new int[] {1, 4}, new float[4]), 5));
    assertTrue(e.getMessage().contains("5 labels"), e.getMessage());
  }
}
