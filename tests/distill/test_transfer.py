"""`zoo distill --unlabelled`: the transfer set read, checked against the
data, mixed into the training split with the label -1, and trained on."""

import dataclasses
import json
import os

import numpy as np
import pytest

from tests.distill.tiny import TINY_RUN, TOPICS, WORDS, teacher_dir, topic_data
from zoo.distill.pipeline import DistillConfig, check_distill_inputs, distill
from zoo.distill.transfer import check_unlabelled_use, read_transfer_set
from zoo.text.readers.classification import TextExample
from zoo.train.data import classification_dataset, load_task_data


def _texts(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _fresh_texts(n):
    rng = np.random.default_rng(9)
    topics = sorted(TOPICS)
    return [
        {"text": " ".join(rng.choice(TOPICS[topics[i % 3]], 5)) + f" x{i}"}
        for i in range(n)
    ]


def test_repeats_and_texts_of_the_data_are_left_out(tmp_path):
    splits = {
        "train": [TextExample("goal match", "sport")],
        "validation": [TextExample("rain storm", "weather")],
        "test": [TextExample("vote law", "politics")],
    }
    rows = [
        {"text": "cup win"},
        {"text": "cup win"},  # a repeat
        {"text": "vote law", "label": "politics"},  # in test; its label is not read
        {"text": "rain storm"},  # in validation
        {"text": "tax party", "label": "anything"},
    ]
    found = read_transfer_set(_texts(tmp_path / "more.jsonl", rows), splits)
    assert [e.text for e in found.examples] == ["cup win", "tax party"]
    assert all(e.label is None for e in found.examples)
    assert (found.read, found.repeated, found.in_data) == (5, 1, 2)
    assert found.record("more.jsonl")["texts_used"] == 2


def test_bad_unlabelled_files_are_refused_by_name(tmp_path):
    splits = {"train": [TextExample("goal match", "sport")], "validation": [], "test": []}
    pairs = {"train": [TextExample("a", "x", "b")], "validation": [], "test": []}
    fifo = tmp_path / "pipe.jsonl"
    os.mkfifo(fifo)
    (tmp_path / "folder.jsonl").mkdir()
    cases = [
        (tmp_path / "none.jsonl", splits, FileNotFoundError, "no such file"),
        (tmp_path / "texts.txt", splits, ValueError, "expected a .csv, .tsv or .jsonl"),
        (fifo, splits, ValueError, "--unlabelled: .*FIFO"),
        (tmp_path / "folder.jsonl", splits, ValueError, "--unlabelled: .*director"),
        (_texts(tmp_path / "same.jsonl", [{"text": "goal match"}]), splits, ValueError,
         "all 1 texts are repeats or already in --data"),
        (_texts(tmp_path / "blank.jsonl", [{"text": "  "}]), splits, ValueError,
         "--unlabelled: .*empty or only whitespace"),
        (_texts(tmp_path / "single.jsonl", [{"text": "c"}]), pairs, ValueError,
         "the data's examples are text pairs"),
        (_texts(tmp_path / "pairs.jsonl", [{"text": "c", "text_b": "d"}]), splits,
         ValueError, "drop the `text_b` column"),
    ]  # fmt: skip
    for path, data, error, message in cases:
        with pytest.raises(error, match=message):
            read_transfer_set(path, data)


def test_unlabelled_is_for_task_mode(tmp_path):
    check_unlabelled_use(None, "general")  # not given: nothing to check
    check_unlabelled_use("t.jsonl", "task")
    with pytest.raises(ValueError, match="--mode general reads unlabelled text already"):
        check_unlabelled_use("t.jsonl", "general")
    teacher, data = teacher_dir(tmp_path), topic_data(tmp_path)
    config = DistillConfig(
        student_layers=2, sequence_length=12, unlabelled=str(tmp_path / "none.jsonl")
    )
    with pytest.raises(FileNotFoundError, match="--unlabelled .*none.jsonl: no such file"):
        check_distill_inputs(teacher, data, config)


def test_unlabelled_texts_join_the_training_batches_marked_minus_one():
    from zoo.text.tokenizer import WordPieceTokenizer

    tokenizer = WordPieceTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS])
    labelled = [TextExample("goal match", "sport"), TextExample("rain storm", "weather")]
    extra = [TextExample("vote law", None), TextExample("cup win", None)]
    ds = classification_dataset(
        labelled, ["sport", "weather"], tokenizer, 8, 4, unlabelled=extra
    )
    (x, y), = list(ds)  # fmt: skip
    assert sorted(y["logits"].numpy().tolist()) == [-1, -1, 0, 1]
    assert x["token_ids"].shape == (4, 8)


@pytest.mark.slow  # a distillation run
def test_a_run_trains_on_the_unlabelled_texts_and_records_them(tmp_path, capsys):
    """Twice the training texts, half of them unlabelled: the epoch has
    twice the batches, and the run says and records what it took."""
    teacher, data = teacher_dir(tmp_path), topic_data(tmp_path)
    n_train = len(load_task_data(data, "classify").splits["train"])
    more = _texts(tmp_path / "more.jsonl", _fresh_texts(n_train))
    config = dataclasses.replace(
        TINY_RUN, epochs=1, cache_teacher=False, unlabelled=str(more)
    )
    summary = distill(teacher, data, tmp_path / "with", config, verbose=1)
    out = capsys.readouterr().out
    assert f"unlabelled: {n_train} texts of {more} join the {n_train} training" in out
    assert summary["unlabelled"] == {
        "file": str(more),
        "texts_read": n_train,
        "texts_used": n_train,
        "dropped_repeats": 0,
        "dropped_in_data": 0,
    }
    history = json.loads((tmp_path / "with" / "history.json").read_text())["history"]
    assert np.isfinite(history["soft_loss"]).all() and history["hard_loss"][0] > 0
    assert f"{-(-2 * n_train // 8)}/{-(-2 * n_train // 8)}" in out  # batches an epoch


def test_the_command_refuses_an_out_around_the_unlabelled_file(tmp_path, capsys):
    """`--out` holding the --unlabelled file is refused before anything is
    written, as for --teacher and --data: --force would remove the input."""
    from zoo.cli import main

    teacher, data = teacher_dir(tmp_path), topic_data(tmp_path)
    run = tmp_path / "run"
    run.mkdir()
    more = _texts(run / "more.jsonl", _fresh_texts(3))
    before = more.read_bytes()
    argv = ["distill", "--teacher", str(teacher), "--data", str(data)]
    argv += ["--student-layers", "2", "--sequence-length", "12", "--force"]
    assert main([*argv, "--unlabelled", str(more), "--out", str(run)]) == 2
    assert "contains --unlabelled" in capsys.readouterr().err
    assert more.read_bytes() == before and sorted(p.name for p in run.iterdir()) == [
        "more.jsonl"
    ]
    # A bad file is refused by name before --out is touched.
    empty = tmp_path / "fresh_out"
    bad = _texts(tmp_path / "bad.jsonl", [{"label": "sport"}])
    assert main([*argv, "--unlabelled", str(bad), "--out", str(empty)]) == 2
    assert "--unlabelled: " in capsys.readouterr().err and not empty.exists()


@pytest.mark.assets  # WordNet and BBC News
def test_the_benchmark_sets_keep_their_unlabelled_texts_apart(tmp_path):
    """bench/small_data.py's unlabelled texts, for both corpora: none is in
    train, validation, test or (the glosses) the development set, and none
    carries its label into the written file."""
    from tests.script_modules import load_script

    bench = load_script("bench/small_data.py")
    for name, build in (("wordnet", bench.build_set), ("bbc", bench.build_bbc_set)):
        rows = build(tmp_path / name / "data")
        texts = {k: {r["text"] for r in v} for k, v in rows.items()}
        assert len(texts["unlabelled"]) == len(rows["unlabelled"]) > 900, name
        for split in set(texts) - {"unlabelled"}:
            assert not texts["unlabelled"] & texts[split], (name, split)
        written = (tmp_path / name / "unlabelled.jsonl").read_text().splitlines()
        assert [json.loads(line) for line in written] == [
            {"text": r["text"]} for r in rows["unlabelled"]
        ]


def test_a_taggers_and_a_question_answerers_transfer_sets(tmp_path):
    """Rows become the teacher's kind of example without a label: a tagger's
    whitespace words (tags None), a question and its context (answers
    None); texts already in the data are left out by the task's own key."""
    from zoo.text.readers import QAExample, TaggedSentence

    tagged = {
        "train": [TaggedSentence(("Ada", "flew", "home"), ("B-PER", "O", "O"))],
        "validation": [],
        "test": [],
    }
    rows = [
        {"text": "Ada  flew home"},
        {"text": "Bo\tsaw\u00a0Rome ."},
        {"text": "Bo saw Rome ."},
    ]
    found = read_transfer_set(_texts(tmp_path / "tag.jsonl", rows), tagged, "tag")
    assert found.examples == [TaggedSentence(("Bo", "saw", "Rome", "."), (None,) * 4)]
    assert (found.read, found.repeated, found.in_data) == (3, 1, 1)
    with pytest.raises(ValueError, match="a tagger reads one text .* drop the `text_b`"):
        read_transfer_set(
            _texts(tmp_path / "pairs.jsonl", [{"text": "a", "text_b": "b"}]), tagged, "tag"
        )

    qa = {
        "train": [QAExample("q1", "Who?", "Ada flew.", (("Ada", 0),))],
        "validation": [],
        "test": [],
    }
    rows = [
        {"text": "Who?", "text_b": "Ada flew."},  # in train
        {"text": "Where?", "text_b": "Bo saw Rome."},
    ]
    found = read_transfer_set(_texts(tmp_path / "qa.jsonl", rows), qa, "qa")
    assert [(e.question, e.context, e.answers) for e in found.examples] == [
        ("Where?", "Bo saw Rome.", None)
    ]
    assert found.in_data == 1
    with pytest.raises(ValueError, match="1 of 2 rows have no `text_b`"):
        read_transfer_set(
            _texts(tmp_path / "q.jsonl", [{"text": "Why?"}, rows[1]]), qa, "qa"
        )


def test_unlabelled_sentences_and_questions_label_no_position():
    """The same pieces as a labelled example, and no label anywhere: every
    tag -1 (so weight 0), every window's start and end -1 (where an
    unanswerable question's are 0, [CLS])."""
    from zoo.text import features as feats
    from zoo.text.readers import QAExample, TaggedSentence
    from zoo.text.tokenizer import WordPieceTokenizer

    tokenizer = WordPieceTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS])
    words = ("goal", "match", "rain")
    inputs, labels, _ = feats.tagging_features(
        [TaggedSentence(words, ("B", "O", "O")), TaggedSentence(words, (None,) * 3)],
        tokenizer,
        {"B": 0, "O": 1},
        8,
    )
    assert (inputs["token_ids"][0] == inputs["token_ids"][1]).all()
    assert labels[0].tolist()[:5] == [-1, 0, 1, 1, -1] and (labels[1] == -1).all()
    context = " ".join(WORDS * 2)
    examples = [
        QAExample("a", "goal", context, None),
        QAExample("b", "goal", context, (), is_impossible=True),
    ]
    features = feats.qa_features(examples, tokenizer, 16, doc_stride=8)
    unlabelled = features.example_index == 0
    assert unlabelled.sum() > 1  # several windows
    assert (features.start_positions[unlabelled] == -1).all()
    assert (features.end_positions[unlabelled] == -1).all()
    assert (features.start_positions[~unlabelled] == 0).all()


def _tiny_task_teacher(tmp_path, task):
    """A tiny tagger or question answerer (teacher_dir's encoder shape), its
    data folder and unlabelled rows of the same kind, none in the data."""
    import zoo
    from tests.train import synthetic
    from zoo.checkpoints import save_model_dir
    from zoo.text.readers.conll import read_conll
    from zoo.text.readers.squad import read_squad
    from zoo.text.tokenizer import WordPieceTokenizer

    data = tmp_path / task
    data.mkdir()
    words = sorted({w.lower() for t in synthetic.NER_TEMPLATES for w in t.split()})
    tokenizer = WordPieceTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *words])
    encoder = zoo.BertEncoder(
        vocabulary_size=len(tokenizer.vocabulary), num_layers=4, num_heads=2,
        hidden_dim=8, intermediate_dim=16, max_sequence_length=48,
    )  # fmt: skip
    if task == "tag":
        for name, n, seed in (("train", 24, 1), ("dev", 8, 2), ("test", 8, 3)):
            synthetic.write_conll(data / f"{name}.conll", n, seed)
        synthetic.write_conll(tmp_path / "more.conll", 24, 4)
        rows = [{"text": " ".join(s.words)} for s in read_conll(tmp_path / "more.conll")]
        tags = ["B-LOC", "B-ORG", "B-PER", "I-ORG", "I-PER", "O"]
        teacher = zoo.TokenClassifier(encoder, len(tags), labels=tags)
    else:
        for name, n, seed in (("train", 24, 1), ("dev", 8, 2), ("test", 8, 3)):
            synthetic.write_squad(data / f"{name}.json", n, seed)
        synthetic.write_squad(tmp_path / "more.json", 24, 4)
        rows = [
            {"text": e.question, "text_b": e.context}
            for e in read_squad(tmp_path / "more.json")
        ]
        teacher = zoo.QuestionAnswerer(encoder)
    teacher_path = save_model_dir(teacher, tmp_path / "teacher", tokenizer)
    return teacher_path, data, _texts(tmp_path / "more.jsonl", rows)


@pytest.mark.slow  # two distillation runs
@pytest.mark.parametrize("task", ["tag", "qa"])
def test_a_tagger_and_a_question_answerer_distil_with_unlabelled_texts(task, tmp_path):
    """The run reads the task's unlabelled rows, trains on them from the
    cached teacher (the hard term counting none of them) and records them."""
    teacher, data, more = _tiny_task_teacher(tmp_path, task)
    config = dataclasses.replace(
        TINY_RUN, epochs=1, sequence_length=48, unlabelled=str(more)
    )
    summary = distill(teacher, data, tmp_path / "run", config, verbose=0)
    record = summary["unlabelled"]
    assert (
        record["texts_used"] + record["dropped_repeats"] + record["dropped_in_data"]
        == (record["texts_read"])
    )
    assert record["texts_used"] > 0
    history = json.loads((tmp_path / "run" / "history.json").read_text())["history"]
    assert (
        np.isfinite(history["soft_loss"]).all() and np.isfinite(history["hard_loss"]).all()
    )
