package org.bertzoo.demo;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.HashMap;
import java.util.Map;
import org.bertzoo.demo.core.OutputTensor;
import org.bertzoo.demo.core.SignatureRunner;
import org.tensorflow.lite.DataType;
import org.tensorflow.lite.Interpreter;
import org.tensorflow.lite.Tensor;

/**
 * {@link SignatureRunner} on the LiteRT {@code Interpreter} (the {@code com.google.ai.edge.litert}
 * AAR). Inputs go in by signature input name through {@code runSignature}, never by position: the
 * converter stores a signature's inputs in an order of its own.
 *
 * <p>Not thread-safe, like the Interpreter: {@link ModelRepository} calls it from one thread.
 */
final class InterpreterSignatureRunner implements SignatureRunner {
  private final Interpreter interpreter;

  /** @param model the memory-mapped .tflite (must stay mapped while the interpreter lives) */
  InterpreterSignatureRunner(ByteBuffer model, int numThreads) {
    Interpreter.Options options = new Interpreter.Options();
    options.setNumThreads(numThreads);
    interpreter = new Interpreter(model, options);
  }

  @Override
  public String[] signatureKeys() {
    return interpreter.getSignatureKeys();
  }

  @Override
  public String[] inputNames(String signatureKey) {
    return interpreter.getSignatureInputs(signatureKey);
  }

  @Override
  public String[] outputNames(String signatureKey) {
    return interpreter.getSignatureOutputs(signatureKey);
  }

  @Override
  public Map<String, OutputTensor> run(String signatureKey, Map<String, int[]> inputs) {
    Map<String, Object> in = new HashMap<String, Object>();
    for (String name : interpreter.getSignatureInputs(signatureKey)) {
      int[] values = inputs.get(name);
      if (values == null) {
        throw new IllegalArgumentException(
            "Signature '" + signatureKey + "' needs input '" + name + "'; received " + inputs.keySet() + ".");
      }
      in.put(name, new int[][] {values}); // [1, L]
    }
    Map<String, Object> out = new HashMap<String, Object>();
    Map<String, Tensor> tensors = new HashMap<String, Tensor>();
    for (String name : interpreter.getSignatureOutputs(signatureKey)) {
      Tensor t = interpreter.getOutputTensorFromSignature(name, signatureKey);
      tensors.put(name, t);
      out.put(name, ByteBuffer.allocateDirect(t.numBytes()).order(ByteOrder.nativeOrder()));
    }
    interpreter.runSignature(in, out, signatureKey);
    Map<String, OutputTensor> result = new HashMap<String, OutputTensor>();
    for (Map.Entry<String, Tensor> e : tensors.entrySet()) {
      Tensor t = e.getValue();
      ByteBuffer b = (ByteBuffer) out.get(e.getKey());
      b.rewind();
      DataType type = t.dataType();
      if (type == DataType.FLOAT32) {
        float[] values = new float[t.numElements()];
        b.asFloatBuffer().get(values);
        result.put(e.getKey(), OutputTensor.float32(t.shape(), values));
      } else if (type == DataType.INT8 || type == DataType.UINT8) {
        byte[] values = new byte[t.numElements()];
        b.get(values);
        Tensor.QuantizationParams q = t.quantizationParams();
        result.put(
            e.getKey(),
            OutputTensor.quantized(
                type == DataType.INT8 ? OutputTensor.Type.INT8 : OutputTensor.Type.UINT8,
                t.shape(),
                values,
                q.getScale(),
                q.getZeroPoint()));
      } else {
        throw new IllegalStateException(
            "Output '" + e.getKey() + "' is " + type + "; the app reads float32, int8 and uint8 outputs.");
      }
    }
    return result;
  }

  void close() {
    interpreter.close();
  }
}
