"""zoo.text.packing, the packer of every zoo tokenizer, on ids directly: both
templates ("bert", "roberta"), single texts and pairs, both truncation rules
(each against a plain-Python statement of it, for every small length and
budget), the budget's edges, empty texts and batches, ragged input forms,
graph use, and the `TemplatePacker` mixin a tokenizer layer inherits. The
tokenizers' own tests compare the packed batches with transformers'."""

from __future__ import annotations

import itertools

import keras
import numpy as np
import pytest
import tensorflow as tf

from zoo.text import packing

# Special ids as the real vocabularies place them: BERT's [PAD] 0, [CLS] 2,
# [SEP] 3 (TINY_VOCAB); RoBERTa's <s> 0, <pad> 1, </s> 2.
IDS = {
    "bert": dict(cls_id=2, sep_id=3, pad_id=0),
    "roberta": dict(cls_id=0, sep_id=2, pad_id=1),
}


def _ragged(rows, dtype=tf.int32):
    return tf.ragged.constant(rows, dtype=dtype, ragged_rank=1, inner_shape=())


def _empty_batch():
    return tf.RaggedTensor.from_row_lengths(
        tf.zeros([0], tf.int32), tf.zeros([0], tf.int64)
    )


def _pack(name, a, b=None, sequence_length=None, truncation="longest_first"):
    out = packing.pack_segments(
        _ragged(a) if isinstance(a, list) else a,
        None if b is None else (_ragged(b) if isinstance(b, list) else b),
        sequence_length,
        truncation,
        layout=name,
        **IDS[name],
    )
    for value in out.values():
        assert value.dtype == tf.int32
    return {k: v.numpy().tolist() for k, v in out.items()}


# --- the two templates ----------------------------------------------------------


def test_bert_single_and_pair():
    single = _pack("bert", [[10, 11, 12], [], [13]], sequence_length=6)
    assert single["token_ids"] == [
        [2, 10, 11, 12, 3, 0],
        [2, 3, 0, 0, 0, 0],
        [2, 13, 3, 0, 0, 0],
    ]
    assert single["segment_ids"] == [[0] * 6] * 3
    assert single["padding_mask"] == [[1] * 5 + [0], [1, 1] + [0] * 4, [1] * 3 + [0] * 3]

    both = _pack("bert", [[10], [10, 11]], [[20, 21], []], sequence_length=8)
    assert both["token_ids"] == [[2, 10, 3, 20, 21, 3, 0, 0], [2, 10, 11, 3, 3, 0, 0, 0]]
    # Segment 1 is B and its [SEP]; padding is segment 0.
    assert both["segment_ids"] == [[0, 0, 0, 1, 1, 1, 0, 0], [0, 0, 0, 0, 1, 0, 0, 0]]
    assert both["padding_mask"] == [[1] * 6 + [0] * 2, [1] * 5 + [0] * 3]


def test_roberta_single_and_pair():
    single = _pack("roberta", [[10, 11, 12], []], sequence_length=6)
    assert single["token_ids"] == [[0, 10, 11, 12, 2, 1], [0, 2, 1, 1, 1, 1]]
    assert single["padding_mask"] == [[1] * 5 + [0], [1, 1] + [0] * 4]

    both = _pack("roberta", [[10], [10, 11]], [[20, 21], []], sequence_length=9)
    assert both["token_ids"] == [
        [0, 10, 2, 2, 20, 21, 2, 1, 1],
        [0, 10, 11, 2, 2, 2, 1, 1, 1],
    ]
    # One segment type: all 0, pairs included.
    assert both["segment_ids"] == [[0] * 9] * 2
    assert both["padding_mask"] == [[1] * 7 + [0] * 2, [1] * 6 + [0] * 3]


def test_templates_describe_their_layouts():
    bert, roberta = packing.TEMPLATES["bert"], packing.TEMPLATES["roberta"]
    assert (bert.text(False), bert.text(True)) == ("[CLS] A [SEP]", "[CLS] A [SEP] B [SEP]")
    assert roberta.text(True) == "<s> A </s> </s> B </s>"
    assert (bert.specials(False), bert.specials(True)) == (2, 3)
    assert (roberta.specials(False), roberta.specials(True)) == (2, 4)
    with pytest.raises(
        ValueError, match=r"`template` must be one of 'bert', 'roberta'.*'t5'"
    ):
        packing.template("t5")


# --- truncation -----------------------------------------------------------------


def _longest_first(n1, n2, budget):
    """The reference's rule, stated plainly (tokenizers' truncate_encodings)."""
    if n1 + n2 <= budget:
        return n1, n2
    first_is_shorter = n1 <= n2
    shorter, longer = (n1, n2) if first_is_shorter else (n2, n1)
    if 2 * shorter <= budget:
        kept = shorter, budget - shorter
    else:
        kept = budget // 2, budget - budget // 2
    return kept if first_is_shorter else kept[::-1]


def _round_robin(n1, n2, budget):
    """One token to each segment in turn, the first first, until the budget
    or the tokens run out."""
    kept = [0, 0]
    for turn in itertools.cycle([0, 1]):
        if sum(kept) == budget or kept == [n1, n2]:
            return tuple(kept)
        if kept[turn] < (n1, n2)[turn]:
            kept[turn] += 1


def test_truncation_rules_for_every_small_pair_and_budget():
    rows = [(n1, n2) for n1 in range(9) for n2 in range(9)]
    a = _ragged([[7] * n1 for n1, _ in rows])
    b = _ragged([[8] * n2 for _, n2 in rows])
    for budget in range(12):
        for rule, expected in (
            ("longest_first", _longest_first),
            ("round_robin", _round_robin),
        ):
            l1, l2 = packing.trimmed_lengths(a, b, budget, rule)
            got = list(zip(l1.numpy().tolist(), l2.numpy().tolist(), strict=True))
            want = [expected(n1, n2, budget) for n1, n2 in rows]
            assert got == want, (rule, budget)


@pytest.mark.parametrize("name", ["bert", "roberta"])
@pytest.mark.parametrize("rule", ["longest_first", "round_robin"])
def test_pairs_keep_what_the_rule_allows(name, rule):
    specials = packing.TEMPLATES[name].specials(True)
    expected = _longest_first if rule == "longest_first" else _round_robin
    for n1, n2, sequence_length in [
        (5, 5, 10),
        (10, 6, 10),
        (6, 10, 10),
        (10, 2, 11),
        (3, 4, 11),
    ]:
        out = _pack(name, [[7] * n1], [[8] * n2], sequence_length, rule)
        row = out["token_ids"][0]
        assert (row.count(7), row.count(8)) == expected(n1, n2, sequence_length - specials)
        assert len(row) == sequence_length


def test_single_texts_are_cut_to_the_room_left():
    for name, sep in (("bert", 3), ("roberta", 2)):
        out = _pack(name, [[10, 11, 12, 13]], sequence_length=4)
        assert out["token_ids"] == [[IDS[name]["cls_id"], 10, 11, sep]]


# --- budget edges ------------------------------------------------------------


def test_the_smallest_lengths_hold_the_specials_only():
    # bert: a pair needs 3, a single text 2; roberta: 4 and 2.
    assert _pack("bert", [[10, 11]], [[20]], 3)["token_ids"] == [[2, 3, 3]]
    assert _pack("bert", [[10, 11]], sequence_length=2)["token_ids"] == [[2, 3]]
    assert _pack("roberta", [[10, 11]], [[20]], 4)["token_ids"] == [[0, 2, 2, 2]]
    assert _pack("roberta", [[10, 11]], sequence_length=2)["token_ids"] == [[0, 2]]


def test_bert_budget_of_one_goes_to_the_longer_segment():
    # [CLS] A [SEP] B [SEP] in 4: one token for A and B together.
    assert _pack("bert", [[10]], [[20, 21]], 4)["token_ids"] == [[2, 3, 20, 3]]
    assert _pack("bert", [[10, 11]], [[20]], 4)["token_ids"] == [[2, 10, 3, 3]]
    # A tie: the first counts as the shorter, the second gets the token.
    assert _pack("bert", [[10]], [[20]], 4)["token_ids"] == [[2, 3, 20, 3]]
    assert _pack("bert", [[10]], [[20]], 4, "round_robin")["token_ids"] == [[2, 10, 3, 3]]


def test_roberta_budget_of_one():
    # <s> A </s> </s> B </s> in 5.
    assert _pack("roberta", [[10]], [[20]], 5)["token_ids"] == [[0, 2, 2, 20, 2]]
    assert _pack("roberta", [[10]], [[20]], 5, "round_robin")["token_ids"] == [
        [0, 10, 2, 2, 2]
    ]
    assert _pack("roberta", [[10, 11]], [[20]], 5)["token_ids"] == [[0, 10, 2, 2, 2]]


def test_a_single_text_at_three():
    assert _pack("bert", [[10, 11]], sequence_length=3)["token_ids"] == [[2, 10, 3]]
    assert _pack("roberta", [[10, 11]], sequence_length=3)["token_ids"] == [[0, 10, 2]]


# --- empty texts and batches, no sequence_length -------------------------------


@pytest.mark.parametrize("name", ["bert", "roberta"])
def test_empty_texts_and_batches(name):
    cls, sep, pad = (IDS[name][k] for k in ("cls_id", "sep_id", "pad_id"))
    assert _pack(name, [[]], [[]], 6)["token_ids"][0][:3] == [cls, sep, sep]
    single = _pack(name, [[], []], sequence_length=3)
    assert single["token_ids"] == [[cls, sep, pad]] * 2
    assert single["padding_mask"] == [[1, 1, 0]] * 2
    for sequence_length, width in ((8, 8), (None, 0)):
        out = packing.pack_segments(
            _empty_batch(), _empty_batch(), sequence_length, layout=name, **IDS[name]
        )
        assert all(v.shape == (0, width) and v.dtype == tf.int32 for v in out.values())


@pytest.mark.parametrize("name", ["bert", "roberta"])
def test_no_sequence_length_pads_to_the_longest_and_cuts_nothing(name):
    out = _pack(name, [[10, 11, 12, 13, 14], [10]], [[20], [20, 21, 22, 23, 24, 25]])
    specials = packing.TEMPLATES[name].specials(True)
    assert [sum(row) for row in out["padding_mask"]] == [6 + specials, 7 + specials]
    assert len(out["token_ids"][0]) == 7 + specials
    assert _pack(name, [[]])["token_ids"] == [[IDS[name]["cls_id"], IDS[name]["sep_id"]]]


# --- input forms and graph use ------------------------------------------------


def test_ragged_forms_give_the_same_features():
    rows_a, rows_b = [[10, 11, 12], [13]], [[20], [21, 22, 23]]
    want = _pack("bert", rows_a, rows_b, 7)
    int64 = _ragged(rows_a, tf.int64)
    splits32 = tf.RaggedTensor.from_row_splits(
        tf.constant([10, 11, 12, 13], tf.int32), tf.constant([0, 3, 4], tf.int32)
    )
    for a in (int64, splits32):
        assert _pack("bert", a, rows_b, 7) == want


@pytest.mark.parametrize("name", ["bert", "roberta"])
def test_same_features_eagerly_in_tf_function_and_tf_data(name):
    a = _ragged([[10, 11, 12], [], [13, 14], [15]])
    b = _ragged([[20], [21, 22, 23, 24], [], [25, 26]])

    def pack(a, b):
        return packing.pack_segments(a, b, 7, layout=name, **IDS[name])

    eager = pack(a, b)
    traced = tf.function(pack, autograph=False)(a, b)
    dataset = tf.data.Dataset.from_tensor_slices((a, b)).batch(3).map(pack)
    mapped = list(dataset)
    for key, value in eager.items():
        np.testing.assert_array_equal(value, traced[key])
        np.testing.assert_array_equal(value, np.concatenate([m[key] for m in mapped]))
        assert traced[key].shape.as_list() == [4, 7]


def test_unknown_truncation_is_named():
    a = _ragged([[10]])
    with pytest.raises(
        ValueError, match=r"`truncation` must be one of .*received 'only_first'"
    ):
        packing.pack_segments(a, a, 8, "only_first", layout="bert", **IDS["bert"])
    with pytest.raises(ValueError, match=r"must be 'longest_first' \(why\); received 'x'"):
        packing.check_truncation("x", ("longest_first",), "why")


# --- TemplatePacker: the tokenizer layer's packing half -------------------------


class _DigitsTokenizer(packing.TemplatePacker, keras.layers.Layer):
    """Token ids written as text ("10 11" -> [10, 11]), packed as BERT."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        for name, value in IDS[self.packing_template].items():
            setattr(self, name, value)
        self._tokenize_graph = tf.function(
            self._tokenize, input_signature=[tf.TensorSpec([None], tf.string)]
        )
        self.built = True

    def _tokenize(self, strings):
        return tf.strings.to_number(tf.strings.split(strings), tf.int32)


class _RobertaDigits(_DigitsTokenizer):
    packing_template = "roberta"


class _RobertaDigitsLongestFirst(_RobertaDigits):
    truncation_strategies = ("longest_first",)
    truncation_refusal = "the reference's rule"


TOKENIZERS = {"bert": _DigitsTokenizer, "roberta": _RobertaDigits}


@pytest.mark.parametrize("name", ["bert", "roberta"])
def test_the_mixin_packs_text_and_ids_as_the_functions_do(name):
    tok = TOKENIZERS[name]()
    texts, texts_b = ["10 11 12 13", "", "14"], ["20", "21 22 23 24 25", ""]
    for b, rule in (
        (None, "longest_first"),
        (texts_b, "longest_first"),
        (texts_b, "round_robin"),
    ):
        rows_b = None if b is None else [[int(w) for w in t.split()] for t in b]
        want = _pack(name, [[int(w) for w in t.split()] for t in texts], rows_b, 7, rule)
        got = tok(texts, text_b=b, sequence_length=7, truncation=rule)
        assert {k: v.numpy().tolist() for k, v in got.items()} == want
        ids = tok.pack_ids(
            tok._tokenize_graph(tf.constant(texts)),
            None if b is None else tok._tokenize_graph(tf.constant(b)),
            sequence_length=7,
            truncation=rule,
        )
        assert {k: v.numpy().tolist() for k, v in ids.items()} == want


def test_the_mixin_checks_its_arguments():
    bert, roberta = _DigitsTokenizer(), _RobertaDigitsLongestFirst()
    with pytest.raises(
        ValueError, match=r"int >= 3 \(room for \[CLS\] A \[SEP\] B \[SEP\]\)"
    ):
        bert(["1"], text_b=["2"], sequence_length=2)
    with pytest.raises(ValueError, match=r"int >= 4 \(room for <s> A </s> </s> B </s>\)"):
        roberta(["1"], text_b=["2"], sequence_length=3)
    with pytest.raises(
        ValueError,
        match=r"must be 'longest_first' \(the reference's rule\); received 'round",
    ):
        roberta(["1"], text_b=["2"], sequence_length=8, truncation="round_robin")
    ids = _ragged([[1]])
    with pytest.raises(ValueError, match="`truncation` must be 'longest_first'"):
        roberta.pack_ids(ids, ids, 8, "round_robin")
    with pytest.raises(
        ValueError, match=r"`sequence_length` must be an int >= 4; received 3"
    ):
        roberta.pack_ids(ids, ids, 3)
    with pytest.raises(
        ValueError, match=r"`sequence_length` must be an int >= 2; received True"
    ):
        bert.pack_ids(ids, None, True)
    with pytest.raises(TypeError, match=r"`a` must be a tf.RaggedTensor of token ids"):
        bert.pack_ids([[1, 2]], None, 8)
    with pytest.raises(TypeError, match=r"`b` must hold integer token ids.*float32"):
        bert.pack_ids(ids, tf.ragged.constant([[1.0]]), 8)
    # Batches of different sizes, known only when run.
    with pytest.raises(tf.errors.InvalidArgumentError, match="same number of examples"):
        bert.pack_ids(_ragged([[1], [2]]), ids, 8)


def test_the_mixin_declares_its_outputs_for_keras():
    tok = _RobertaDigits()
    text = keras.Input(shape=(), dtype="string")
    spec = tok.compute_output_spec(text, sequence_length=16)
    assert sorted(spec) == ["padding_mask", "segment_ids", "token_ids"]
    assert all(v.shape == (None, 16) and v.dtype == "int32" for v in spec.values())
