package org.bertzoo.demo.core;

import java.util.Map;

/**
 * Runs one signature of a LiteRT model, inputs and outputs by name.
 *
 * <p>Signature inputs come back from the converter sorted alphabetically, not in the order the
 * model was written with, so nothing here has a position: a runner feeds each input to the tensor
 * of that name. The app implements it with the LiteRT {@code Interpreter}; the JVM end-to-end
 * check with the LiteRT C library through JNA.
 */
public interface SignatureRunner {
  /** The signature keys in the model file, e.g. {@code serving_L128}. */
  String[] signatureKeys();

  /** Input names of one signature. */
  String[] inputNames(String signatureKey);

  /** Output names of one signature. */
  String[] outputNames(String signatureKey);

  /**
   * Runs {@code signatureKey} on int32 {@code [1, L]} inputs.
   *
   * @return every output of the signature, by name
   */
  Map<String, OutputTensor> run(String signatureKey, Map<String, int[]> inputs) throws Exception;
}
