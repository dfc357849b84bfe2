"""Sentence embeddings (mean pooling over real tokens, L2-normalised): the
real all-MiniLM-L6-v2 reproduces its model card's similarities through the
library, and `zoo similarity` prints the library's cosines."""

import json

import numpy as np
import pytest

from tests.export.conftest import TINY, VOCABULARY, sentences
from zoo.cli import main
from zoo.models.sentence_embedding import (
    PUBLISHED_SIMILARITY,
    SIMILARITY_SENTENCES,
    cosine,
    embed_texts,
    pair_cosines,
)


@pytest.mark.assets
def test_minilm_reproduces_the_published_similarities(minilm):
    encoder, tokenizer = minilm
    emb = embed_texts(encoder, tokenizer, SIMILARITY_SENTENCES, sequence_length=32)
    np.testing.assert_allclose(np.linalg.norm(emb, axis=1), 1.0, atol=1e-5)
    for (i, j), published in PUBLISHED_SIMILARITY.items():
        assert abs(float(emb[i] @ emb[j]) - published) < 0.002, (i, j)
    # Padding does not change an embedding (mean over real tokens only).
    longer = embed_texts(encoder, tokenizer, SIMILARITY_SENTENCES[:1], sequence_length=128)
    np.testing.assert_allclose(longer[0], emb[0], atol=1e-5)
    pairs = pair_cosines(
        encoder,
        tokenizer,
        SIMILARITY_SENTENCES[:1] * 2,
        SIMILARITY_SENTENCES[1:3],
        sequence_length=32,
    )
    np.testing.assert_allclose(pairs, [emb[0] @ emb[1], emb[0] @ emb[2]], atol=1e-6)


def test_zoo_similarity_prints_the_library_cosines(tmp_path, capsys):
    import zoo
    from zoo.checkpoints import save_model_dir
    from zoo.text.tokenizer import WordPieceTokenizer

    tokenizer = WordPieceTokenizer(VOCABULARY)
    encoder = zoo.BertEncoder(vocabulary_size=len(VOCABULARY), **TINY)
    model_dir = save_model_dir(encoder, tmp_path / "tiny", tokenizer)
    a, b = sentences(3, seed=1), sentences(3, seed=2)
    expected = pair_cosines(encoder, tokenizer, a, b, sequence_length=32)
    assert cosine([[1, 0]], [[-2, 0]])[0] == pytest.approx(-1.0)
    (tmp_path / "pairs.jsonl").write_text(
        "".join(json.dumps({"text": x, "text_b": y}) + "\n" for x, y in zip(a, b))
    )
    capsys.readouterr()
    assert (
        main(
            [
                "similarity",
                "--model",
                str(model_dir),
                "--input",
                str(tmp_path / "pairs.jsonl"),
                "--json",
                "--sequence-length",
                "32",
            ]
        )
        == 0
    )
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [r["input"] for r in rows] == [1, 2, 3]
    np.testing.assert_allclose([r["cosine"] for r in rows], expected, atol=1e-5)
    assert (
        main(
            [
                "similarity",
                "--model",
                str(model_dir),
                "--text",
                a[0],
                "--embeddings",
                "--sequence-length",
                "32",
            ]
        )
        == 0
    )
    vector = json.loads(capsys.readouterr().out)["embedding"]
    assert len(vector) == TINY["hidden_dim"]
    np.testing.assert_allclose(
        vector, embed_texts(encoder, tokenizer, a[:1], 32)[0], atol=1e-6
    )
    # A text without a partner is a clear error, not a traceback.
    assert (
        main(
            [
                "similarity",
                "--model",
                str(model_dir),
                "--text",
                a[0],
                "--sequence-length",
                "32",
            ]
        )
        == 2
    )
    assert "--text 1: no text_b to compare with" in capsys.readouterr().err
    # Flags that would be ignored are refused; bad text is named where it is.
    common = ["similarity", "--model", str(model_dir), "--sequence-length", "32"]
    for argv, message in [
        (
            ["--input", str(tmp_path / "pairs.jsonl"), "--text-b", "b"],
            "--text-b goes with --text; an --input file gives",
        ),
        (["--text", "a", "--text-b", "b", "--embeddings"], "--embeddings prints"),
        (["--text", "a\udcff", "--text-b", "b"], "--text 1: `text` holds '\\udcff'"),
        (["--text", "a", "--text-b", "\ud800b"], "--text 1: `text_b` holds '\\ud800'"),
    ]:
        assert main([*common, *argv]) == 2, argv
        err = capsys.readouterr().err
        assert message in err and "Traceback" not in err, (argv, err)
