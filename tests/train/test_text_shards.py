"""Pre-training text streamed from many files (`zoo.text.pretraining.TextShards`):
every anchor sentence once per epoch, the same batches for the same (seed,
epoch), files named by folder or glob, and memory that stays flat as the
corpus grows (Austen + WordNet split into 100 files, then 4 copies)."""

import json
import random
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from zoo.text.pretraining import TextShards, _Corpus, read_documents, text_files
from zoo.text.tokenizer import WordPieceTokenizer

WORDS = (
    "goal match team win cup rain storm cloud wind sun vote law party minister tax".split()
)


@pytest.fixture(scope="module")
def tokenizer():
    return WordPieceTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS, "."])


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    root = tmp_path_factory.mktemp("shards") / "corpus"
    (root / "nested").mkdir(parents=True)
    rng = random.Random(1)
    for part in range(7):
        documents = [
            " ".join(
                " ".join(rng.choices(WORDS, k=rng.randint(2, 6))).capitalize() + "."
                for _ in range(rng.randint(1, 5))
            )
            for _ in range(5)
        ]
        folder = root / "nested" if part % 3 == 0 else root
        (folder / f"part-{part}.txt").write_text("\n\n".join(documents) + "\n")
    (root / "notes.csv").write_text("not,text\n")  # not a text suffix: ignored
    return root


def _first_segments(dataset, tokenizer):
    """The A segment of every example, masked tokens restored."""
    segments = []
    for x, y, w in dataset:
        ids = x["token_ids"].numpy().copy()
        rows = np.arange(len(ids))[:, None]
        real = w["mlm_logits"].numpy() > 0
        positions = x["masked_positions"].numpy()
        ids[np.broadcast_to(rows, positions.shape)[real], positions[real]] = y[
            "mlm_logits"
        ].numpy()[real]
        for row in ids:
            sep = list(row).index(tokenizer.sep_id)
            segments.append(tuple(row[1:sep]))
    return segments


def test_an_epoch_anchors_every_sentence_once_across_file_groups(corpus, tokenizer):
    shards = TextShards.from_path(corpus, group_bytes=200)  # several groups
    counts = shards.count()
    documents = read_documents(corpus)
    expected = _Corpus(documents, tokenizer)
    assert counts["files"] == 7 and counts["groups"] >= 3
    assert counts["documents"] == len(documents)
    assert counts["examples"] == len(expected.anchors)
    ds = shards.dataset(
        tokenizer, sequence_length=64, max_predictions=2, batch_size=5, drop_remainder=False
    )
    assert int(ds.cardinality()) == -(-counts["examples"] // 5)
    sentences = tf.RaggedTensor.from_row_lengths(
        expected.arrays["pieces"], expected.arrays["sentence_length"]
    )
    anchors = sorted(tuple(sentences[i].numpy()) for i in expected.anchors)
    assert sorted(_first_segments(ds, tokenizer)) == anchors


def test_same_seed_and_epoch_same_batches(corpus, tokenizer):
    epoch = tf.Variable(0, dtype=tf.int64)

    def batches(at):
        epoch.assign(at)
        ds = TextShards.from_path(corpus, group_bytes=200).dataset(
            tokenizer, sequence_length=32, batch_size=4, seed=5, epoch_variable=epoch
        )
        return [x["token_ids"].numpy() for x, _, _ in ds]

    first, again, second = batches(0), batches(0), batches(1)
    assert len(first) == len(second) >= 5
    for a, b in zip(first, again):
        np.testing.assert_array_equal(a, b)
    assert any(not np.array_equal(a, b) for a, b in zip(first, second))


def test_files_by_folder_or_glob_and_clear_errors(corpus, tmp_path):
    assert len(text_files(corpus)) == 7
    assert [p.name for p in text_files(f"{corpus}/part-*.txt")] == [
        "part-1.txt",
        "part-2.txt",
        "part-4.txt",
        "part-5.txt",
    ]
    with pytest.raises(FileNotFoundError, match="matches no file"):
        text_files(f"{corpus}/*.nothing")
    with pytest.raises(FileNotFoundError, match="no such file, folder or pattern"):
        text_files(tmp_path / "absent")
    one = tmp_path / "one.txt"
    one.write_text("A single document. With two sentences.\n")
    with pytest.raises(ValueError, match="needs at least 2 documents"):
        TextShards.from_path(one).count()


RSS = """
import json, resource, sys
from zoo.train.pretrain import PretrainConfig, pretrain, pretraining_corpus
corpus = pretraining_corpus(sys.argv[1])
config = PretrainConfig(epochs=1, batch_size=16, sequence_length=64, max_predictions=5,
                        steps_per_epoch=5, eval_batches=1, learning_rate=1e-3)
result = pretrain("bert_tiny", corpus, sys.argv[2], config, verbose=0)
print(json.dumps({"peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "counts": corpus.count(), "steps": result["steps"]}))
"""


@pytest.mark.assets
@pytest.mark.slow
def test_sharded_real_corpus_pretrains_with_flat_memory(tmp_path):
    """Austen + WordNet written as 100 files, then as 4 copies (400 files):
    the same 5 steps of `zoo pretrain`'s code from each, peak RSS of each
    process. Groups of 1 MB, 4 open at a time: memory is bounded by the
    groups, not by the corpus."""
    from tests.conftest import asset_or_fail
    from zoo.train.pretrain import corpus_documents

    documents = asset_or_fail(
        lambda: corpus_documents("austen+wordnet"), "Jane Austen + WordNet"
    )

    # A gloss starts in lower case and has no full stop: both are added so
    # that the files split back into the same sentences.
    def sentence(s):
        s = s[:1].upper() + s[1:]
        return s if s.rstrip('"').endswith((".", "!", "?")) else s + "."

    text = [
        "\n\n".join(" ".join(map(sentence, d)) for d in documents[i::100]) + "\n"
        for i in range(100)
    ]
    peaks = {}
    for copies in (1, 4):
        folder = tmp_path / f"x{copies}"
        folder.mkdir()
        for c in range(copies):
            for i, chunk in enumerate(text):
                (folder / f"shard-{c}-{i:03d}.txt").write_text(chunk)
        script = tmp_path / "rss.py"
        script.write_text(RSS)
        run = subprocess.run(
            [sys.executable, str(script), str(folder), str(tmp_path / f"o{copies}")],
            capture_output=True,
            text=True,
            timeout=900,
        )
        assert run.returncode == 0, run.stderr[-3000:]
        peaks[copies] = json.loads(run.stdout.strip().splitlines()[-1])
    one, four = peaks[1], peaks[4]
    assert one["counts"]["files"] == 100 and four["counts"]["files"] == 400
    assert four["counts"]["examples"] == 4 * one["counts"]["examples"]
    ratio = four["peak_rss_mb"] / one["peak_rss_mb"]
    print(
        f"\nsharded Austen+WordNet: 1x ({one['counts']['sentences']:,} sentences, "
        f"{one['counts']['groups']} groups) peak RSS {one['peak_rss_mb']:.0f} MB; 4x "
        f"({four['counts']['sentences']:,} sentences, {four['counts']['groups']} groups) "
        f"{four['peak_rss_mb']:.0f} MB: ratio {ratio:.3f}"
    )
    assert ratio < 1.1
