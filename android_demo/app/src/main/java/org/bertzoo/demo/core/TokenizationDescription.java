package org.bertzoo.demo.core;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.Iterator;
import java.util.List;
import org.json.JSONArray;
import org.json.JSONObject;

/**
 * The exporter's declarative tokenization description ({@code metadata.json}'s {@code
 * "tokenization"}, written by {@code zoo/text/description.py}), checked field by field as that
 * module's {@code check} does, then mapped to this app's tokenizer as its {@code
 * wordpiece_arguments} maps it for the {@code bert} flavour.
 *
 * <p>The app's tokenizer implements BERT's rule only: normalizer {@code bert_clean}, {@code
 * cjk_spacing} (required: the Unicode tables fuse it into cleaning), optional {@code
 * strip_accents} and {@code lowercase} in that order; pre-tokenizer {@code bert}; no word
 * normalizer; a WordPiece model whose words are limited in characters. Every other description is
 * refused when the model is opened, with a message naming the field and the step.
 */
public final class TokenizationDescription {
  public static final String FIELD = "tokenization";
  static final int VERSION = 1;
  static final List<String> NORMALIZER_STEPS =
      Arrays.asList(
          "bert_clean", "cjk_spacing", "strip_accents", "lowercase", "nfkc_casefold", "nfc",
          "nfkc", "nfd", "nfkd");
  static final List<String> WORD_NORMALIZER_STEPS = Arrays.asList("nfkc_casefold");
  static final List<String> PRE_TOKENIZERS =
      Arrays.asList("bert", "keras_hub_bert", "byte_level", "metaspace");
  static final List<String> MODELS = Arrays.asList("WordPiece", "BPE", "Unigram");
  static final List<String> WORD_UNITS = Arrays.asList("characters", "bytes");
  static final List<String> POST_PROCESSORS = Arrays.asList("bert", "roberta");
  static final int MAX_STEPS = 16;
  static final int MAX_TOKEN_CHARS = 64;
  static final int MAX_WORD = 10000;
  /** The order in which the app's tokenizer runs the normalizer steps it implements. */
  static final List<String> APP_ORDER =
      Arrays.asList("bert_clean", "cjk_spacing", "strip_accents", "lowercase");

  private static final String ADVICE =
      "; export a model whose tokenizer uses BERT's rule (zoo's WordPiece tokenizer, flavor"
          + " 'bert'), or run this model with the zoo's Python tokenizer.";

  public final List<String> normalizer;
  public final String preTokenizer;
  public final List<String> wordNormalizer;
  public final String modelType;
  /** WordPiece only: the word limit and its unit ("characters" or "bytes"); else -1 and null. */
  public final int maxWord;
  public final String maxWordUnit;
  public final String unkToken;
  public final String postProcessor;
  public final String cls;
  public final String sep;
  public final String pad;
  public final String mask;

  private TokenizationDescription(
      List<String> normalizer,
      String preTokenizer,
      List<String> wordNormalizer,
      String modelType,
      int maxWord,
      String maxWordUnit,
      String unkToken,
      String postProcessor,
      String cls,
      String sep,
      String pad,
      String mask) {
    this.normalizer = Collections.unmodifiableList(normalizer);
    this.preTokenizer = preTokenizer;
    this.wordNormalizer = Collections.unmodifiableList(wordNormalizer);
    this.modelType = modelType;
    this.maxWord = maxWord;
    this.maxWordUnit = maxWordUnit;
    this.unkToken = unkToken;
    this.postProcessor = postProcessor;
    this.cls = cls;
    this.sep = sep;
    this.pad = pad;
    this.mask = mask;
  }

  /** Normalizer step {@code lowercase} present (BERT's per-character lowercasing). */
  public boolean lowercase() {
    return normalizer.contains("lowercase") || wordNormalizer.contains("nfkc_casefold");
  }

  public boolean stripAccents() {
    return normalizer.contains("strip_accents");
  }

  public boolean cjkSpacing() {
    return normalizer.contains("cjk_spacing");
  }

  /**
   * Parses and checks a description (every field typed and bounded, unknown fields refused).
   *
   * @throws IllegalArgumentException naming the field: "tokenization.model.max_word: ..."
   */
  public static TokenizationDescription parse(Object value) {
    if (!(value instanceof JSONObject)) {
      throw error("", short_(value) + "; expected an object");
    }
    JSONObject o = (JSONObject) value;
    String[] top = {
      "version", "normalizer", "pre_tokenizer", "word_normalizer", "model", "post_processor"
    };
    only(o, "", top);
    for (String k : top) {
      if (!o.has(k)) {
        throw error(k, "missing");
      }
    }
    Object version = o.opt("version");
    if (!(version instanceof Integer) || ((Integer) version) != VERSION) {
      throw error(
          "version",
          short_(version) + "; expected " + VERSION + " (a newer zoo wrote this file: update the"
              + " app, or re-export with this zoo)");
    }
    List<String> normalizer = steps(o.opt("normalizer"), "normalizer", NORMALIZER_STEPS);
    List<String> words = steps(o.opt("word_normalizer"), "word_normalizer", WORD_NORMALIZER_STEPS);
    Object preValue = o.opt("pre_tokenizer");
    if (!(preValue instanceof JSONObject)) {
      throw error("pre_tokenizer", short_(preValue) + "; expected an object");
    }
    JSONObject pre = (JSONObject) preValue;
    only(pre, "pre_tokenizer", new String[] {"type", "add_prefix_space"});
    String preType = oneOf(pre.opt("type"), "pre_tokenizer.type", PRE_TOKENIZERS);
    if (preType.equals("byte_level")) {
      if (!(pre.opt("add_prefix_space") instanceof Boolean)) {
        throw error(
            "pre_tokenizer.add_prefix_space",
            short_(pre.opt("add_prefix_space")) + "; expected true or false");
      }
    } else if (pre.has("add_prefix_space")) {
      throw error("pre_tokenizer.add_prefix_space", "only for byte_level");
    }
    Object modelValue = o.opt("model");
    if (!(modelValue instanceof JSONObject)) {
      throw error("model", short_(modelValue) + "; expected an object");
    }
    JSONObject model = (JSONObject) modelValue;
    only(model, "model", new String[] {"type", "unk_token", "prefix", "max_word", "max_word_unit"});
    String modelType = oneOf(model.opt("type"), "model.type", MODELS);
    String unk = token(model.opt("unk_token"), "model.unk_token", true);
    int maxWord = -1;
    String unit = null;
    if (modelType.equals("WordPiece")) {
      if (!"##".equals(model.opt("prefix"))) {
        throw error("model.prefix", short_(model.opt("prefix")) + "; expected '##'");
      }
      Object size = model.opt("max_word");
      if (!(size instanceof Integer) || (Integer) size < 1 || (Integer) size > MAX_WORD) {
        throw error(
            "model.max_word", short_(size) + "; expected an integer from 1 to " + MAX_WORD);
      }
      maxWord = (Integer) size;
      unit = oneOf(model.opt("max_word_unit"), "model.max_word_unit", WORD_UNITS);
      if (unk == null) {
        throw error("model.unk_token", "missing; WordPiece needs one");
      }
    }
    Object postValue = o.opt("post_processor");
    if (!(postValue instanceof JSONObject)) {
      throw error("post_processor", short_(postValue) + "; expected an object");
    }
    JSONObject post = (JSONObject) postValue;
    only(post, "post_processor", new String[] {"type", "cls", "sep", "pad", "mask"});
    String postType = oneOf(post.opt("type"), "post_processor.type", POST_PROCESSORS);
    String cls = token(post.opt("cls"), "post_processor.cls", false);
    String sep = token(post.opt("sep"), "post_processor.sep", false);
    String pad = post.has("pad") ? token(post.opt("pad"), "post_processor.pad", false) : null;
    String mask = post.has("mask") ? token(post.opt("mask"), "post_processor.mask", false) : null;
    return new TokenizationDescription(
        normalizer, preType, words, modelType, maxWord, unit, unk, postType, cls, sep, pad, mask);
  }

  /**
   * Refuses, naming the field and the step, a description the app's tokenizer does not implement
   * exactly ({@code description.app_refusal} on the Python side); returns normally otherwise.
   */
  public void requireAppImplements() {
    if (!modelType.equals("WordPiece")) {
      throw error(
          "model.type",
          modelType + " is not implemented by the app's tokenizer (it implements WordPiece)"
              + ADVICE);
    }
    if (!preTokenizer.equals("bert")) {
      throw error(
          "pre_tokenizer.type",
          preTokenizer + " (" + describePre(preTokenizer) + ") is not implemented by the app's"
              + " tokenizer, which splits words by BERT's rule (pre_tokenizer 'bert')" + ADVICE);
    }
    if (!wordNormalizer.isEmpty()) {
      throw error(
          "word_normalizer[0]",
          wordNormalizer.get(0) + " (" + describeStep(wordNormalizer.get(0)) + ") is not"
              + " implemented by the app's tokenizer" + ADVICE);
    }
    for (int i = 0; i < normalizer.size(); i++) {
      String step = normalizer.get(i);
      if (!APP_ORDER.contains(step)) {
        throw error(
            "normalizer[" + i + "]",
            step + " (" + describeStep(step) + ") is not implemented by the app's tokenizer"
                + ADVICE);
      }
    }
    List<String> ordered = new ArrayList<String>();
    for (String step : APP_ORDER) {
      if (normalizer.contains(step)) {
        ordered.add(step);
      }
    }
    if (!ordered.equals(normalizer)) {
      throw error(
          "normalizer",
          join(normalizer) + "; the app's tokenizer runs its steps once each in the order "
              + join(APP_ORDER) + ADVICE);
    }
    if (!normalizer.contains("bert_clean")) {
      throw error(
          "normalizer",
          join(normalizer) + "; the app's tokenizer splits words by BERT's rule only after step"
              + " bert_clean" + ADVICE);
    }
    if (!normalizer.contains("cjk_spacing")) {
      throw error(
          "normalizer",
          join(normalizer) + " has no cjk_spacing: the app's tokenizer always puts each CJK"
              + " ideograph in a word of its own (BERT's rule)" + ADVICE);
    }
    if (!"characters".equals(maxWordUnit)) {
      throw error(
          "model.max_word_unit",
          maxWordUnit + "; the app's tokenizer limits words in characters (BERT's rule)"
              + ADVICE);
    }
  }

  private static String describePre(String type) {
    if (type.equals("keras_hub_bert")) {
      return "keras-hub's word split";
    }
    if (type.equals("byte_level")) {
      return "GPT-2/RoBERTa byte-level split";
    }
    if (type.equals("metaspace")) {
      return "SentencePiece";
    }
    return type;
  }

  private static String describeStep(String step) {
    if (step.equals("nfkc_casefold")) {
      return "keras-hub's case folding";
    }
    if (step.startsWith("nf")) {
      return "a Unicode normal form";
    }
    return "a normalizer step";
  }

  private static List<String> steps(Object value, String field, List<String> allowed) {
    if (!(value instanceof JSONArray) || ((JSONArray) value).length() > MAX_STEPS) {
      throw error(field, short_(value) + "; expected a list of at most " + MAX_STEPS + " steps");
    }
    JSONArray a = (JSONArray) value;
    List<String> out = new ArrayList<String>();
    for (int i = 0; i < a.length(); i++) {
      String where = field + "[" + i + "]";
      Object step = a.opt(i);
      if (!(step instanceof JSONObject)
          || ((JSONObject) step).length() != 1
          || !((JSONObject) step).has("type")) {
        throw error(where, short_(step) + "; expected {\"type\": NAME}");
      }
      out.add(oneOf(((JSONObject) step).opt("type"), where + ".type", allowed));
    }
    return out;
  }

  private static String oneOf(Object value, String field, List<String> allowed) {
    if (!(value instanceof String) || !allowed.contains(value)) {
      throw error(field, short_(value) + "; expected one of " + join(allowed));
    }
    return (String) value;
  }

  private static String token(Object value, String field, boolean optional) {
    if (optional && (value == null || value == JSONObject.NULL)) {
      return null;
    }
    if (!(value instanceof String)
        || ((String) value).isEmpty()
        || ((String) value).codePointCount(0, ((String) value).length()) > MAX_TOKEN_CHARS) {
      throw error(
          field,
          short_(value) + "; expected a token spelling of 1 to " + MAX_TOKEN_CHARS + " characters");
    }
    return (String) value;
  }

  private static void only(JSONObject o, String field, String[] allowed) {
    List<String> names = Arrays.asList(allowed);
    List<String> unknown = new ArrayList<String>();
    Iterator<String> keys = o.keys();
    while (keys.hasNext()) {
      String k = keys.next();
      if (!names.contains(k)) {
        unknown.add(k);
      }
    }
    if (!unknown.isEmpty()) {
      Collections.sort(unknown);
      throw error(
          field.isEmpty() ? unknown.get(0) : field + "." + unknown.get(0),
          "not a field of a tokenization description (fields: " + join(names) + ")");
    }
  }

  private static String join(List<String> items) {
    StringBuilder b = new StringBuilder();
    for (String s : items) {
      b.append(b.length() == 0 ? "" : ", ").append(s);
    }
    return b.length() == 0 ? "none" : b.toString();
  }

  private static String short_(Object value) {
    String text =
        value == null || value == JSONObject.NULL
            ? "null"
            : value instanceof String ? "'" + value + "'" : String.valueOf(value);
    return text.length() <= 60 ? text : text.substring(0, 57) + "...";
  }

  private static IllegalArgumentException error(String field, String what) {
    return new IllegalArgumentException(
        "metadata.json " + FIELD + (field.isEmpty() ? "" : "." + field) + ": " + what);
  }
}
