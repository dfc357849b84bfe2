package org.bertzoo.demo.e2e;

import com.sun.jna.Library;
import com.sun.jna.Memory;
import com.sun.jna.Native;
import com.sun.jna.Pointer;
import com.sun.jna.ptr.IntByReference;
import com.sun.jna.ptr.LongByReference;
import com.sun.jna.ptr.PointerByReference;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.bertzoo.demo.core.OutputTensor;
import org.bertzoo.demo.core.SignatureRunner;

/**
 * A {@link SignatureRunner} on the LiteRT C API of {@code libLiteRt.so} (the library inside the
 * {@code ai-edge-litert} wheel), called through JNA.
 *
 * <p>This is how the JVM checks the real {@code .tflite} end to end without a phone: the same
 * runtime code the Android AAR wraps, driven by the same Java core. The wheel exports the LiteRT
 * {@code CompiledModel} C API (not the older {@code TfLite*} one), so this binds that: environment
 * -> model -> compiled model (CPU) -> one host-memory tensor buffer per signature input and output,
 * each found by name.
 *
 * <p>Bindings follow {@code litert/c/*.h} of LiteRT 2.3; {@code LiteRtCreateModelFromFile} takes
 * the environment first in that release (checked on the exported symbol, which tests only its
 * second and third arguments).
 */
public final class LiteRtJna implements SignatureRunner, AutoCloseable {
  /** The subset of the LiteRT C API used here; {@code size_t} is a Java long (LP64 only). */
  public interface Api extends Library {
    int LiteRtCreateEnvironment(int numOptions, Pointer options, PointerByReference environment);

    void LiteRtDestroyEnvironment(Pointer environment);

    int LiteRtCreateModelFromFile(Pointer environment, String filename, PointerByReference model);

    void LiteRtDestroyModel(Pointer model);

    int LiteRtCreateOptions(PointerByReference options);

    void LiteRtDestroyOptions(Pointer options);

    int LiteRtSetOptionsHardwareAccelerators(Pointer options, int accelerators);

    int LiteRtCreateCompiledModel(
        Pointer environment, Pointer model, Pointer options, PointerByReference compiledModel);

    void LiteRtDestroyCompiledModel(Pointer compiledModel);

    int LiteRtGetNumModelSignatures(Pointer model, LongByReference count);

    int LiteRtGetModelSignature(Pointer model, long index, PointerByReference signature);

    int LiteRtGetSignatureKey(Pointer signature, PointerByReference key);

    int LiteRtGetNumSignatureInputs(Pointer signature, LongByReference count);

    int LiteRtGetSignatureInputName(Pointer signature, long index, PointerByReference name);

    int LiteRtGetSignatureInputTensor(Pointer signature, String name, PointerByReference tensor);

    int LiteRtGetNumSignatureOutputs(Pointer signature, LongByReference count);

    int LiteRtGetSignatureOutputName(Pointer signature, long index, PointerByReference name);

    int LiteRtGetSignatureOutputTensor(Pointer signature, String name, PointerByReference tensor);

    int LiteRtGetRankedTensorType(Pointer tensor, Pointer rankedTensorType);

    int LiteRtGetQuantizationTypeId(Pointer tensor, IntByReference typeId);

    int LiteRtGetPerTensorQuantization(Pointer tensor, Pointer quantization);

    int LiteRtCreateTensorBufferFromHostMemory(
        Pointer rankedTensorType, Pointer hostMemory, long size, Pointer deallocator, PointerByReference buffer);

    void LiteRtDestroyTensorBuffer(Pointer buffer);

    int LiteRtRunCompiledModel(
        Pointer compiledModel, long signatureIndex, long numInputs, Pointer[] inputs, long numOutputs, Pointer[] outputs);
  }

  // LiteRtElementType values (they are TfLiteType's).
  static final int FLOAT32 = 1;
  static final int INT32 = 2;
  static final int UINT8 = 3;
  static final int INT64 = 4;
  static final int INT8 = 9;
  static final int HW_ACCELERATOR_CPU = 1;
  static final int QUANTIZATION_PER_TENSOR = 1;
  /** sizeof(LiteRtRankedTensorType) is 72 on x86-64; room to spare. */
  private static final int RANKED_TENSOR_TYPE_BYTES = 128;

  private static final int ALIGNMENT = 64; // LITERT_HOST_MEMORY_BUFFER_ALIGNMENT

  /** One input or output of a signature, with its buffer. */
  private static final class Port {
    final String name;
    final int elementType;
    final int[] shape;
    final Memory hostMemory;
    final Pointer buffer;
    final float scale;
    final int zeroPoint;

    Port(String name, int elementType, int[] shape, Memory hostMemory, Pointer buffer, float scale, int zeroPoint) {
      this.name = name;
      this.elementType = elementType;
      this.shape = shape;
      this.hostMemory = hostMemory;
      this.buffer = buffer;
      this.scale = scale;
      this.zeroPoint = zeroPoint;
    }

    int numElements() {
      int n = 1;
      for (int d : shape) {
        n *= d;
      }
      return n;
    }
  }

  private static final class Signature {
    final int index;
    final List<Port> inputs = new ArrayList<Port>();
    final List<Port> outputs = new ArrayList<Port>();

    Signature(int index) {
      this.index = index;
    }
  }

  private final Api api;
  private final Pointer environment;
  private final Pointer model;
  private final Pointer options;
  private final Pointer compiledModel;
  private final Map<String, Signature> signatures = new LinkedHashMap<String, Signature>();
  private final List<Memory> keepAlive = new ArrayList<Memory>();

  /**
   * @param library path of libLiteRt.so
   * @param modelPath path of the .tflite file
   */
  public LiteRtJna(String library, String modelPath) {
    api = Native.load(library, Api.class);
    PointerByReference ref = new PointerByReference();
    check(api.LiteRtCreateEnvironment(0, null, ref), "LiteRtCreateEnvironment");
    environment = ref.getValue();
    check(api.LiteRtCreateModelFromFile(environment, modelPath, ref), "LiteRtCreateModelFromFile " + modelPath);
    model = ref.getValue();
    check(api.LiteRtCreateOptions(ref), "LiteRtCreateOptions");
    options = ref.getValue();
    check(api.LiteRtSetOptionsHardwareAccelerators(options, HW_ACCELERATOR_CPU), "set CPU accelerator");
    check(api.LiteRtCreateCompiledModel(environment, model, options, ref), "LiteRtCreateCompiledModel");
    compiledModel = ref.getValue();
    LongByReference count = new LongByReference();
    check(api.LiteRtGetNumModelSignatures(model, count), "LiteRtGetNumModelSignatures");
    for (int s = 0; s < count.getValue(); s++) {
      check(api.LiteRtGetModelSignature(model, s, ref), "LiteRtGetModelSignature");
      Pointer signature = ref.getValue();
      check(api.LiteRtGetSignatureKey(signature, ref), "LiteRtGetSignatureKey");
      String key = ref.getValue().getString(0, "UTF-8");
      Signature sig = new Signature(s);
      LongByReference n = new LongByReference();
      check(api.LiteRtGetNumSignatureInputs(signature, n), "LiteRtGetNumSignatureInputs");
      for (int i = 0; i < n.getValue(); i++) {
        check(api.LiteRtGetSignatureInputName(signature, i, ref), "LiteRtGetSignatureInputName");
        String name = ref.getValue().getString(0, "UTF-8");
        check(api.LiteRtGetSignatureInputTensor(signature, name, ref), "LiteRtGetSignatureInputTensor " + name);
        sig.inputs.add(port(name, ref.getValue()));
      }
      check(api.LiteRtGetNumSignatureOutputs(signature, n), "LiteRtGetNumSignatureOutputs");
      for (int i = 0; i < n.getValue(); i++) {
        check(api.LiteRtGetSignatureOutputName(signature, i, ref), "LiteRtGetSignatureOutputName");
        String name = ref.getValue().getString(0, "UTF-8");
        check(api.LiteRtGetSignatureOutputTensor(signature, name, ref), "LiteRtGetSignatureOutputTensor " + name);
        sig.outputs.add(port(name, ref.getValue()));
      }
      signatures.put(key, sig);
    }
  }

  /** Reads a tensor's type and creates a 64-byte-aligned host buffer for it. */
  private Port port(String name, Pointer tensor) {
    Memory type = new Memory(RANKED_TENSOR_TYPE_BYTES);
    type.clear();
    check(api.LiteRtGetRankedTensorType(tensor, type), "LiteRtGetRankedTensorType " + name);
    keepAlive.add(type);
    int elementType = type.getInt(0);
    // LiteRtLayout: `unsigned rank : 7; bool has_strides : 1;` in one word, then int32 dims[8].
    int rank = type.getInt(4) & 0x7F;
    int[] shape = type.getIntArray(8, rank);
    int bytesPerElement;
    switch (elementType) {
      case FLOAT32:
      case INT32:
        bytesPerElement = 4;
        break;
      case INT64:
        bytesPerElement = 8;
        break;
      case INT8:
      case UINT8:
        bytesPerElement = 1;
        break;
      default:
        throw new IllegalStateException("tensor '" + name + "' has element type " + elementType
            + ", which this runner does not handle");
    }
    long elements = 1;
    for (int d : shape) {
      if (d < 0) {
        throw new IllegalStateException("tensor '" + name + "' has a dynamic shape; phone"
            + " artifacts must have fixed [1, L] signatures");
      }
      elements *= d;
    }
    long size = elements * bytesPerElement;
    Memory host = new Memory(size + ALIGNMENT);
    Memory aligned = (Memory) host.align(ALIGNMENT);
    keepAlive.add(host);
    PointerByReference ref = new PointerByReference();
    check(api.LiteRtCreateTensorBufferFromHostMemory(type, aligned, size, null, ref),
        "LiteRtCreateTensorBufferFromHostMemory " + name);
    float scale = 0f;
    int zeroPoint = 0;
    IntByReference q = new IntByReference();
    if (api.LiteRtGetQuantizationTypeId(tensor, q) == 0 && q.getValue() == QUANTIZATION_PER_TENSOR) {
      Memory params = new Memory(16); // {float scale; int64_t zero_point;}
      check(api.LiteRtGetPerTensorQuantization(tensor, params), "LiteRtGetPerTensorQuantization");
      scale = params.getFloat(0);
      zeroPoint = (int) params.getLong(8);
    }
    return new Port(name, elementType, shape, aligned, ref.getValue(), scale, zeroPoint);
  }

  private static void check(int status, String what) {
    if (status != 0) {
      throw new IllegalStateException(what + " failed with LiteRtStatus " + status);
    }
  }

  private Signature signature(String key) {
    Signature s = signatures.get(key);
    if (s == null) {
      throw new IllegalArgumentException("no signature '" + key + "'; the model has " + signatures.keySet());
    }
    return s;
  }

  @Override
  public String[] signatureKeys() {
    return signatures.keySet().toArray(new String[0]);
  }

  @Override
  public String[] inputNames(String signatureKey) {
    List<String> out = new ArrayList<String>();
    for (Port p : signature(signatureKey).inputs) {
      out.add(p.name);
    }
    return out.toArray(new String[0]);
  }

  @Override
  public String[] outputNames(String signatureKey) {
    List<String> out = new ArrayList<String>();
    for (Port p : signature(signatureKey).outputs) {
      out.add(p.name);
    }
    return out.toArray(new String[0]);
  }

  /** Input element types and shapes by name, for the tests. */
  public Map<String, int[]> inputShapes(String signatureKey) {
    Map<String, int[]> out = new LinkedHashMap<String, int[]>();
    for (Port p : signature(signatureKey).inputs) {
      if (p.elementType != INT32) {
        throw new IllegalStateException("input '" + p.name + "' is not int32 (type " + p.elementType + ")");
      }
      out.put(p.name, p.shape);
    }
    return out;
  }

  @Override
  public synchronized Map<String, OutputTensor> run(String signatureKey, Map<String, int[]> inputs) {
    Signature sig = signature(signatureKey);
    Pointer[] in = new Pointer[sig.inputs.size()];
    for (int i = 0; i < in.length; i++) {
      Port p = sig.inputs.get(i);
      int[] values = inputs.get(p.name);
      if (values == null) {
        throw new IllegalArgumentException("no value for input '" + p.name + "' of " + signatureKey
            + "; received " + inputs.keySet());
      }
      if (values.length != p.numElements() || p.elementType != INT32) {
        throw new IllegalArgumentException("input '" + p.name + "' takes " + p.numElements()
            + " int32 values; received " + values.length);
      }
      p.hostMemory.write(0, values, 0, values.length);
      in[i] = p.buffer;
    }
    Pointer[] out = new Pointer[sig.outputs.size()];
    for (int i = 0; i < out.length; i++) {
      out[i] = sig.outputs.get(i).buffer;
    }
    check(api.LiteRtRunCompiledModel(compiledModel, sig.index, in.length, in, out.length, out),
        "LiteRtRunCompiledModel " + signatureKey);
    Map<String, OutputTensor> result = new HashMap<String, OutputTensor>();
    for (Port p : sig.outputs) {
      int n = p.numElements();
      switch (p.elementType) {
        case FLOAT32:
          result.put(p.name, OutputTensor.float32(p.shape, p.hostMemory.getFloatArray(0, n)));
          break;
        case INT8:
        case UINT8:
          OutputTensor.Type t = p.elementType == INT8 ? OutputTensor.Type.INT8 : OutputTensor.Type.UINT8;
          result.put(p.name, OutputTensor.quantized(t, p.shape, p.hostMemory.getByteArray(0, n), p.scale, p.zeroPoint));
          break;
        default:
          throw new IllegalStateException("output '" + p.name + "' has element type " + p.elementType);
      }
    }
    return result;
  }

  @Override
  public synchronized void close() {
    for (Signature s : signatures.values()) {
      for (Port p : s.inputs) {
        api.LiteRtDestroyTensorBuffer(p.buffer);
      }
      for (Port p : s.outputs) {
        api.LiteRtDestroyTensorBuffer(p.buffer);
      }
    }
    signatures.clear();
    api.LiteRtDestroyCompiledModel(compiledModel);
    api.LiteRtDestroyOptions(options);
    api.LiteRtDestroyModel(model);
    api.LiteRtDestroyEnvironment(environment);
  }
}
