"""Word-piece alignment for tagging and answer offsets for span QA,
checked by hand on the real BERT uncased vocabulary."""

import numpy as np
import pytest

from zoo.text import features
from zoo.text.readers import QAExample, TaggedSentence
from zoo.train.finetune import FinetuneConfig, check_inputs

pytestmark = pytest.mark.assets


@pytest.fixture(scope="module")
def tokenizer(minilm):
    return minilm[1]


def pieces(tokenizer, ids):
    return [tokenizer.vocabulary[i] for i in ids]


def test_tagging_first_piece_carries_the_label(tokenizer):
    sentence = TaggedSentence(("Johanson", "visited", "Reykjavik"), ("B-PER", "O", "B-LOC"))
    tag_to_id = {"O": 0, "B-PER": 1, "B-LOC": 2}
    inputs, labels, word_index = features.tagging_features(
        [sentence], tokenizer, tag_to_id, 16
    )
    n = int(inputs["padding_mask"][0].sum())
    tokens = pieces(tokenizer, inputs["token_ids"][0, :n])
    assert tokens[0] == "[CLS]" and tokens[-1] == "[SEP]"
    assert "".join(t.removeprefix("##") for t in tokens[1:-1]) == "johansonvisitedreykjavik"
    # Exactly one labelled piece per word, at the word's first piece.
    labelled = np.flatnonzero(labels[0] >= 0)
    assert [tokens[i] for i in labelled] == [
        tokens[1],
        "visited",
        tokens[tokens.index("visited") + 1],
    ]
    assert labels[0, labelled].tolist() == [1, 0, 2]
    assert word_index[0, labelled].tolist() == [0, 1, 2]
    assert all(not tokens[i].startswith("##") for i in labelled)
    # Continuation pieces and specials are ignored.
    assert (labels[0, n:] == -1).all() and labels[0, 0] == -1 and labels[0, n - 1] == -1
    # Decoding maps the first-piece prediction back to words.
    logits = np.zeros((1, 16, 3))
    logits[0, labelled, [1, 0, 2]] = 5.0
    assert features.tags_from_logits(
        logits, word_index, [sentence], ["O", "B-PER", "B-LOC"]
    ) == [["B-PER", "O", "B-LOC"]]


def test_qa_answer_spanning_several_pieces_maps_exactly(tokenizer):
    context = "The treaty was signed by Johanson in Reykjavik during 1972."
    answer = "Johanson in Reykjavik"
    example = QAExample(
        "q1", "Who signed the treaty?", context, ((answer, context.index(answer)),)
    )
    f = features.qa_features([example], tokenizer, sequence_length=48, doc_stride=16)
    assert len(f.example_index) == 1
    start, end = int(f.start_positions[0]), int(f.end_positions[0])
    tokens = pieces(tokenizer, f.inputs["token_ids"][0])
    span = tokens[start : end + 1]
    assert "".join(t.removeprefix("##") for t in span) == "johansoninreykjavik"
    assert len(span) > 3  # several pieces, including ## continuations
    assert f.inputs["segment_ids"][0, start] == 1
    # Decoding the gold span gives back the original words.
    s = np.full((1, 48), -10.0)
    e = np.full((1, 48), -10.0)
    s[0, start] = e[0, end] = 10.0
    assert features.decode_answers(f, s, e, [example]) == {"q1": answer}


def test_doc_stride_windows_and_unanswerable(tokenizer):
    words = [f"word{i}" for i in range(120)]
    context = " ".join(words)
    target = "word100"
    example = QAExample("q", "Which word?", context, ((target, context.index(target)),))
    f = features.qa_features([example], tokenizer, sequence_length=64, doc_stride=24)
    assert len(f.example_index) > 2  # long context -> several windows
    found = [i for i in range(len(f.example_index)) if f.start_positions[i] > 0]
    assert found, "the answer is inside at least one window"
    for i in found:
        tokens = pieces(tokenizer, f.inputs["token_ids"][i])
        span = tokens[f.start_positions[i] : f.end_positions[i] + 1]
        assert "".join(t.removeprefix("##") for t in span) == "word100"
    # Windows without the answer point at [CLS].
    assert (
        f.start_positions[[i for i in range(len(f.example_index)) if i not in found]] == 0
    ).all()
    # Overlap: consecutive windows share context.
    assert f.token_to_word[1][min(f.token_to_word[1])] < max(f.token_to_word[0].values())
    impossible = QAExample("n", "Which?", "short context", (), True)
    g = features.qa_features([impossible], tokenizer, 32)
    assert g.start_positions.tolist() == [0] and g.end_positions.tolist() == [0]
    s = np.zeros((1, 32))
    s[0, 0] = 5.0
    assert features.decode_answers(g, s, s.copy(), [impossible], allow_null=True) == {
        "n": ""
    }


# --- windows over long texts (classification) ---------------------------------


def test_text_windows_cover_a_long_text_in_order(tokenizer):
    text = " ".join(f"word{i}" for i in range(40))
    ids = tokenizer.tokenize([text]).to_list()[0]
    length, stride = 16, 10  # room for 14 pieces per window
    windows = features.text_windows([text, "A short one."], tokenizer, length, stride, 64)
    owner = windows.example_index.tolist()
    first = tokenizer([text, "A short one."], sequence_length=length)
    # The first window of each text is exactly what the truncating packer gives.
    for i, row in enumerate([0, owner.index(1)]):
        for key in ("token_ids", "segment_ids", "padding_mask"):
            np.testing.assert_array_equal(windows.inputs[key][row], first[key].numpy()[i])
    # Windows start at 0, 10, 20, ... and the last one reaches the end.
    n = owner.count(0)
    assert n == 1 + -(-(len(ids) - 14) // stride)
    for w in range(n):
        mask = windows.inputs["padding_mask"][w]
        body = windows.inputs["token_ids"][w, 1 : mask.sum() - 1].tolist()
        assert windows.inputs["token_ids"][w, 0] == tokenizer.cls_id
        assert windows.inputs["token_ids"][w, mask.sum() - 1] == tokenizer.sep_id
        assert body == ids[w * stride : w * stride + 14]
        assert (windows.inputs["token_ids"][w, mask.sum() :] == tokenizer.pad_id).all()
    assert windows.inputs["token_ids"][n - 1, mask.sum() - 2] == ids[-1]
    assert owner == [0] * n + [1]


def test_text_windows_cap_and_bad_arguments(tokenizer):
    text = " ".join(f"word{i}" for i in range(40))
    windows = features.text_windows([text, ""], tokenizer, 16, 10, 2)
    assert windows.example_index.tolist() == [0, 0, 1]
    # An empty text still gets its [CLS] [SEP] window.
    assert windows.inputs["token_ids"][2, :3].tolist() == [
        tokenizer.cls_id,
        tokenizer.sep_id,
        tokenizer.pad_id,
    ]
    for bad in (0, -1, 1.5, True, features.MAX_WINDOWS + 1, 10**12):
        with pytest.raises(ValueError, match="max_windows must be an integer in 1..64"):
            features.text_windows([text], tokenizer, 16, 10, bad)
    with pytest.raises(
        ValueError, match="doc_stride must be a positive integer; received 0"
    ):
        features.text_windows([text], tokenizer, 16, 0, 2)
    with pytest.raises(ValueError, match="sequence_length must be an int >= 3; received 2"):
        features.text_windows([text], tokenizer, 2, 10, 2)
    same = features.text_windows([text], tokenizer, np.int64(16), np.int32(10), np.int64(2))
    np.testing.assert_array_equal(same.inputs["token_ids"], windows.inputs["token_ids"][:2])


def test_average_windows_is_the_mean_per_text():
    logits = np.array([[1.0, 0.0], [3.0, 2.0], [0.0, 5.0]])
    np.testing.assert_allclose(
        features.average_windows(logits, np.array([0, 0, 1]), 2), [[2.0, 1.0], [0.0, 5.0]]
    )
    with pytest.raises(ValueError, match="at least one window"):
        features.average_windows(logits, np.array([0, 0, 2]), 3)


def test_windowed_classification_dataset_labels_every_window(tokenizer):
    from zoo.text.readers import TextExample
    from zoo.train.data import classification_dataset

    long = " ".join(f"word{i}" for i in range(40))
    examples = [TextExample(long, "b"), TextExample("Short.", "a")]
    ds = classification_dataset(
        examples, ["a", "b"], tokenizer, 16, 64, max_windows=3, doc_stride=14
    )
    x, y = next(iter(ds))
    assert x["token_ids"].shape == (4, 16)  # 3 windows of the long text, 1 of the short
    assert y["logits"].numpy().tolist() == [1, 1, 1, 0]
    pairs = [TextExample(long, "b", text_b="second text")]
    with pytest.raises(ValueError, match="text pairs .text_b.*max_windows=1"):
        classification_dataset(pairs, ["a", "b"], tokenizer, 16, 8, max_windows=3)


def test_finetune_config_bounds_max_windows():
    assert FinetuneConfig(max_windows=features.MAX_WINDOWS).max_windows == 64
    with pytest.raises(ValueError, match="--max-windows must be at most 64"):
        FinetuneConfig(max_windows=features.MAX_WINDOWS + 1)
    # Windows are classify's: another task refuses them instead of recording
    # a setting it never used in its model directory.
    for task in ("regress", "tag", "qa"):
        with pytest.raises(
            ValueError, match=f"--max-windows 4: .*drop it for --task {task}"
        ):
            check_inputs("no-model", "no-data", task, FinetuneConfig(max_windows=4))


def _long_odd_text(n=3000, seed=0):
    """Words joined by runs of mixed whitespace, with accents, CJK,
    punctuation, a control character Python calls whitespace, and words too
    long for a word piece."""
    rng = np.random.default_rng(seed)
    words = [
        "Café",
        "naïve",
        "東京",
        "don't",
        "x" * 150,
        "a\x1cb",
        "(ok)",
        "3.14",
        "Ünïcode",
    ]
    words += [f"word{i}" for i in range(20)]
    gaps = [" ", "  ", "\t", "\n", " \n  ", "\r\n", "\x1c ", "\u3000"]
    parts = []
    for _ in range(n):
        parts += [words[rng.integers(len(words))], gaps[rng.integers(len(gaps))]]
    return "".join(parts)


def _cut_changes(tokenizer, text, positions):
    """The positions where the text's prefix tokenizes otherwise than the
    start of the whole text."""
    whole = tokenizer.tokenize([text]).to_list()[0]
    prefixes = tokenizer.tokenize([text[:i] for i in positions]).to_list()
    return [i for i, ids in zip(positions, prefixes) if ids != whole[: len(ids)]]


def check_leading_texts(tokenizer, monkeypatch, naive_cuts_differ=True):
    """Windows and the truncating packer give the same ids from a long
    text's prefix (`leading_texts`) as from the whole text; at every place
    `leading_texts` may cut, the prefix's pieces start the whole text's,
    where cutting at any whitespace would not."""
    text = _long_odd_text(120, seed=5)
    starts = [m.start() for m in features._RUN_START.finditer(text)]
    assert len(starts) > 100 and _cut_changes(tokenizer, text, starts) == []
    anywhere = [i for i, c in enumerate(text) if c.isspace()]
    assert bool(_cut_changes(tokenizer, text, anywhere)) == naive_cuts_differ
    texts = [_long_odd_text(seed=s) for s in range(4)] + ["short", " lead  and trail "]
    cut = features.leading_texts(texts, tokenizer, 14 + 2 * 10)
    assert all(len(c) < len(t) for c, t in zip(cut[:4], texts[:4]))  # it did cut
    assert cut[4:] == texts[4:]
    bounded = features.text_windows(texts, tokenizer, 16, 10, 3)
    packed = tokenizer(features.leading_texts(texts, tokenizer, 16), sequence_length=16)
    monkeypatch.setattr(features, "_CHARS_PER_PIECE", 10**12)  # never cut
    assert features.leading_texts(texts, tokenizer, 34) == texts
    whole = features.text_windows(texts, tokenizer, 16, 10, 3)
    for key in whole.inputs:
        np.testing.assert_array_equal(bounded.inputs[key], whole.inputs[key])
    np.testing.assert_array_equal(bounded.example_index, whole.example_index)
    reference = tokenizer(texts, sequence_length=16)
    for key in reference:
        np.testing.assert_array_equal(np.asarray(packed[key]), np.asarray(reference[key]))


def test_a_long_text_is_tokenized_in_a_prefix_with_the_same_ids(tokenizer, monkeypatch):
    check_leading_texts(tokenizer, monkeypatch)


def test_a_long_text_is_tokenized_in_a_prefix_with_the_same_ids_byte_level(
    tmp_path, monkeypatch
):
    from tests.bpe import train_bpe
    from zoo.text.byte_pair_tokenizer import BytePairTokenizer

    bpe = train_bpe([_long_odd_text(200, seed=9)] * 3, tmp_path, vocabulary_size=400)
    check_leading_texts(
        BytePairTokenizer(bpe / "vocab.json", bpe / "merges.txt"), monkeypatch
    )
