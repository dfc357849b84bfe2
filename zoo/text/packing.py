"""The packer every zoo tokenizer uses: token-id segments (one text, or a
pair) into the dense int32 `[batch, length]` features an encoder reads,
`token_ids`, `segment_ids` and `padding_mask` (1 = token, 0 = padding).

Two templates:

- "bert" (WordPiece, SentencePiece): `[CLS] A [SEP]` and
  `[CLS] A [SEP] B [SEP]`; segment id 0 up to the first `[SEP]`, 1 for B
  and its `[SEP]` (BERT's `token_type_ids`);
- "roberta" (byte-level BPE): `<s> A </s>` and `<s> A </s> </s> B </s>`;
  segment ids all 0 (RoBERTa has one segment type, and its reference's
  `token_type_ids` are 0 for pairs too).

With a `sequence_length`, every row is padded (with the pad id) or cut to
it; the specials always stay, the segments are cut. A pair shares what the
specials leave (the budget) by one of two rules:

- "longest_first", the reference's (`tokenizers`' `truncate_encodings`, as
  `BertTokenizerFast` and `RobertaTokenizerFast` call it with
  `truncation=True`): if the shorter segment fits in half the budget it is
  kept whole and the longer gets the rest; otherwise the shorter gets
  floor(budget / 2) and the longer ceil(budget / 2), the first segment
  counting as the shorter on a tie;
- "round_robin": tensorflow-text's `RoundRobinTrimmer` (one token to each
  segment in turn; on a tie the first gets the odd token). Its trimmer is a
  tensorflow-text op, so a SavedModel that packs with it needs
  tensorflow-text to load.

Without a `sequence_length` nothing is cut and rows are padded to the
longest one of the batch.

Use: the module functions (`pack_segments`, `kept_lengths`, `pack`) on
ragged ids, or `TemplatePacker`, the mixin a tokenizer layer inherits for
its `__call__`, `call`, `pack_ids` and `compute_output_spec` (it names the
template and provides `_tokenize_graph` and the special ids).

The packed rows are built with dense gathers and `tf.where`, not ragged
concatenation (`combine_segments`, whose ragged ops have no TFLite
kernels), so the packer can follow an exported tokenizer wherever the
tokenizer itself runs; the methods are not converted by AutoGraph (no
Python control flow on tensors), which would otherwise re-parse them and
tensorflow-text's code on every trace.
"""

from __future__ import annotations

import dataclasses

import keras
import numpy as np
import tensorflow as tf
import tensorflow_text as tft

from zoo.configs import DEFAULT_SEQUENCE_LENGTH, INPUT_NAMES
from zoo.text.text_inputs import describe, packing_arguments

TRUNCATION_STRATEGIES = ("longest_first", "round_robin")

_no_autograph = tf.autograph.experimental.do_not_convert


@dataclasses.dataclass(frozen=True)
class Template:
    """A packing layout: `single` and `pair` list the parts in order, each
    `(part, segment id)` with part "cls", "sep", "A" or "B"; `cls` and `sep`
    are the usual spellings, for messages."""

    name: str
    cls: str
    sep: str
    single: tuple
    pair: tuple

    def parts(self, pair):
        return self.pair if pair else self.single

    def specials(self, pair):
        """How many special tokens a packed row holds."""
        return sum(1 for part, _ in self.parts(pair) if part not in ("A", "B"))

    def text(self, pair):
        """The layout as text, e.g. "[CLS] A [SEP] B [SEP]"."""
        spell = {"cls": self.cls, "sep": self.sep, "A": "A", "B": "B"}
        return " ".join(spell[part] for part, _ in self.parts(pair))


TEMPLATES = {
    "bert": Template(
        "bert",
        "[CLS]",
        "[SEP]",
        single=(("cls", 0), ("A", 0), ("sep", 0)),
        pair=(("cls", 0), ("A", 0), ("sep", 0), ("B", 1), ("sep", 1)),
    ),
    "roberta": Template(
        "roberta",
        "<s>",
        "</s>",
        single=(("cls", 0), ("A", 0), ("sep", 0)),
        pair=(("cls", 0), ("A", 0), ("sep", 0), ("sep", 0), ("B", 0), ("sep", 0)),
    ),
}


def template(name):
    """The `Template` named `name` ("bert" or "roberta"), or ValueError."""
    if not isinstance(name, str) or name not in TEMPLATES:
        raise ValueError(
            f"`template` must be one of {', '.join(map(repr, TEMPLATES))}; received "
            f"{name!r}. 'bert' packs [CLS] A [SEP] B [SEP], 'roberta' <s> A </s></s> B </s>."
        )
    return TEMPLATES[name]


def check_truncation(truncation, strategies=TRUNCATION_STRATEGIES, why=""):
    """Raise ValueError naming `truncation` unless it is one of `strategies`
    (`why`: a sentence saying why others are refused)."""
    if not isinstance(truncation, str) or truncation not in strategies:
        expected = (
            repr(strategies[0])
            if len(strategies) == 1
            else f"one of {', '.join(map(repr, strategies))}"
        )
        raise ValueError(
            f"`truncation` must be {expected}{f' ({why})' if why else ''}; "
            f"received {truncation!r}."
        )


def _lengths(segment):
    return tf.cast(segment.row_lengths(), tf.int32)


def trimmed_lengths(a, b, budget, truncation="longest_first"):
    """Kept lengths `(l1, l2)` (int32 `[batch]`) of a pair of segments
    (ragged `[batch, (ids)]`) that must fit in `budget` tokens together."""
    if truncation == "round_robin":
        a, b = tft.RoundRobinTrimmer(budget).trim([a, b])
        return _lengths(a), _lengths(b)
    check_truncation(truncation)
    n1, n2 = _lengths(a), _lengths(b)
    shorter = tf.minimum(n1, n2)
    fits = 2 * shorter <= budget
    keep_shorter = tf.where(fits, shorter, budget // 2)
    keep_longer = tf.where(fits, budget - shorter, budget - budget // 2)
    first_longer = n1 > n2
    over = n1 + n2 > budget
    l1 = tf.where(first_longer, keep_longer, keep_shorter)
    l2 = tf.where(first_longer, keep_shorter, keep_longer)
    return tf.where(over, l1, n1), tf.where(over, l2, n2)


def kept_lengths(a, b, sequence_length, truncation, layout):
    """Kept lengths `(l1, l2 or None)` of `a` (and `b`) packed by `layout`
    (a `Template` or its name) in `sequence_length` tokens (None: all)."""
    layout = template(layout) if isinstance(layout, str) else layout
    n1 = _lengths(a)
    if b is None:
        if sequence_length is None:
            return n1, None
        return tf.minimum(n1, sequence_length - layout.specials(False)), None
    if sequence_length is None:
        return n1, _lengths(b)
    budget = sequence_length - layout.specials(True)
    return trimmed_lengths(a, b, budget, truncation)


def pack(a, b, l1, l2, sequence_length, layout, cls_id, sep_id, pad_id):
    """Dense features of segments `a` (and `b`, or None) cut to their kept
    lengths `l1` (and `l2`), laid out by `layout` (a `Template` or its
    name), padded with `pad_id` to `sequence_length` (None: the longest)."""
    layout = template(layout) if isinstance(layout, str) else layout
    pair = b is not None
    kept = {"A": (a, l1), "B": (b, l2)}
    special = {"cls": cls_id, "sep": sep_id}
    length = layout.specials(pair) + l1 + (l2 if pair else 0)  # [batch]
    width = (
        sequence_length
        if sequence_length is not None
        else tf.reduce_max(tf.concat([[0], length], 0))
    )
    positions = tf.range(width)[None, :] + tf.zeros_like(length)[:, None]  # [batch, width]
    shape = None if sequence_length is None else [None, sequence_length]

    def take(segment, start):  # the segment's token at position - start, per row
        d = tf.cast(segment, tf.int32).to_tensor(default_value=pad_id, shape=shape)
        # One padding column more than needed, so the gather has a valid
        # index even for an empty segment or an empty batch.
        d = tf.concat([d, tf.fill([tf.shape(d)[0], 1], pad_id)], axis=1)
        index = tf.clip_by_value(positions - start, 0, tf.shape(d)[1] - 1)
        return tf.gather(d, index, batch_dims=1)

    token_ids = tf.fill(tf.shape(positions), pad_id)
    segment_ids = tf.zeros_like(token_ids)
    start = tf.zeros_like(length)[:, None]
    for part, segment_id in layout.parts(pair):
        if part in kept:
            segment, keep = kept[part]
            end = start + keep[:, None]
            inside = (positions >= start) & (positions < end)
            token_ids = tf.where(inside, take(segment, start), token_ids)
        else:
            end = start + 1
            inside = positions == start
            token_ids = tf.where(inside, special[part], token_ids)
        if segment_id:
            segment_ids = tf.where(inside, segment_id, segment_ids)
        start = end
    # tf.where rather than a bool cast: the LiteRT converter trips on casts
    # of bools feeding an embedding.
    padding_mask = tf.where(positions < length[:, None], 1, 0)
    return {
        "token_ids": tf.cast(token_ids, tf.int32),
        "segment_ids": tf.cast(segment_ids, tf.int32),
        "padding_mask": tf.cast(padding_mask, tf.int32),
    }


def pack_segments(
    a,
    b=None,
    sequence_length=None,
    truncation="longest_first",
    *,
    layout,
    cls_id,
    sep_id,
    pad_id,
):
    """Dense features of ragged id segments `a` (and `b`): kept lengths by
    `truncation`, then `pack`. `text` and `text_b` batches of different
    sizes fail at run time (their sizes may be unknown when traced)."""
    if b is not None:
        tf.debugging.assert_equal(
            tf.size(_lengths(a)),
            tf.size(_lengths(b)),
            message="`text` and `text_b` must hold the same number of examples",
        )
    l1, l2 = kept_lengths(a, b, sequence_length, truncation, layout)
    return pack(a, b, l1, l2, sequence_length, layout, cls_id, sep_id, pad_id)


def _check_segment(value, name):
    if not isinstance(value, tf.RaggedTensor) or value.shape.rank != 2:
        raise TypeError(
            f"`{name}` must be a tf.RaggedTensor of token ids, [batch, (ids)], without "
            f"special tokens (as `tokenize` returns); received {describe(value)}."
        )
    if not value.dtype.is_integer:
        raise TypeError(
            f"`{name}` must hold integer token ids; received a tf.RaggedTensor of "
            f"{value.dtype.name}."
        )


class TemplatePacker:
    """The packing half of a tokenizer layer: inherit it before
    `keras.layers.Layer`. The class sets `packing_template` (a name in
    `TEMPLATES`) and, to refuse a rule, `truncation_strategies` (and
    `truncation_refusal`, why); an instance has `cls_id`, `sep_id`,
    `pad_id` and `_tokenize_graph` (1-D tf.string -> ragged int32 ids)."""

    packing_template = "bert"
    truncation_strategies = TRUNCATION_STRATEGIES
    truncation_refusal = ""

    @property
    def packing_layout(self):
        """This tokenizer's packing `Template`."""
        return TEMPLATES[self.packing_template]

    @_no_autograph
    def __call__(
        self, text, text_b=None, sequence_length=None, truncation="longest_first", **kwargs
    ):
        # Validate and convert here, before Keras sees the arguments, so a
        # wrong input gets this layer's error rather than a conversion error.
        check_truncation(truncation, self.truncation_strategies, self.truncation_refusal)
        layout = self.packing_layout
        strings, strings_b, sequence_length = packing_arguments(
            text, text_b, sequence_length, (layout.text(False), layout.text(True))
        )
        # The Layer's own __call__ by name, not super(): the methods of this
        # class are also bound into classes whose other bases define one.
        return keras.layers.Layer.__call__(
            self,
            strings,
            text_b=strings_b,
            sequence_length=sequence_length,
            truncation=truncation,
            **kwargs,
        )

    @_no_autograph
    def call(self, text, text_b=None, sequence_length=None, truncation="longest_first"):
        a = self._tokenize_graph(text)
        b = None if text_b is None else self._tokenize_graph(text_b)
        return self._pack_segments(a, b, sequence_length, truncation)

    @_no_autograph
    def pack_ids(
        self, a, b=None, sequence_length=DEFAULT_SEQUENCE_LENGTH, truncation="longest_first"
    ):
        """Pack already tokenized segments (ragged int ids, no specials) into
        the dense features `__call__` returns, trimming as it does.

        For pipelines that tokenize once and pair segments later (BERT
        pre-training builds sentence pairs from a tokenized corpus).
        """
        minimum = self.packing_layout.specials(b is not None)
        if (
            not isinstance(sequence_length, (int, np.integer))
            or isinstance(sequence_length, bool)
            or sequence_length < minimum
        ):
            raise ValueError(
                f"`sequence_length` must be an int >= {minimum}; received {sequence_length!r}."
            )
        check_truncation(truncation, self.truncation_strategies, self.truncation_refusal)
        _check_segment(a, "a")
        if b is not None:
            _check_segment(b, "b")
        return self._pack_segments(a, b, int(sequence_length), truncation)

    def _pack_segments(self, a, b, sequence_length, truncation):
        return pack_segments(
            a,
            b,
            sequence_length,
            truncation,
            layout=self.packing_layout,
            cls_id=self.cls_id,
            sep_id=self.sep_id,
            pad_id=self.pad_id,
        )

    def compute_output_spec(
        self, text, text_b=None, sequence_length=None, truncation="longest_first"
    ):
        shape = (text.shape[0], sequence_length)
        return {k: keras.KerasTensor(shape, dtype="int32") for k in INPUT_NAMES}
