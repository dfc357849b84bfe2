"""The project against its peers, in one run: `make bench` (or `--quick`).

    .venv/bin/python bench/peers.py [--quick] [--out bench]

Peers: keras-hub (`BertBackbone`), HF transformers on PyTorch (`BertModel`),
ONNX Runtime (fp32, and dynamic int8 from `onnxruntime.quantization`, both
exported from the same torch weights) and LiteRT (the project's own
`.tflite` files). Rows:

- encoder forward: latency at batch 1 (1 and 2 threads), throughput at
  batch 8 and 32 (2 threads), 128 tokens; the real all-MiniLM-L6-v2, and
  BERT-Base (random weights, the timing does not depend on them) unless
  `--quick`;
- fine-tuning examples/s (MiniLM, batch 16 x 128, AdamW) for the project's
  `fit`, a PyTorch loop and keras-hub's `fit`: the median of 3 rounds (2
  with `--quick`), each engine in a fresh process per round, the order
  rotated between rounds;
- distillation examples/s, the same way: the frozen MiniLM teacher into a
  2-layer student from its layers 0 and 3 with DistilBERT's losses, the
  project's `Distiller.fit` against a PyTorch loop (its student keeps
  BERT's layout with the teacher's layers 0 and 3 copied in; the project's
  is DistilBERT-style, without segment embeddings and pooler: the same two
  layers of compute);
- text-in serving texts/s through the project's SavedModel at batch
  1 / 8 / 32 on whole BBC articles;
- every `.tflite` mode the project exports (batch 1, 1 thread).

Each thread count runs in its own process (TensorFlow fixes its thread
pools at start-up); within a process the engines are called in interleaved
rounds so that load from elsewhere falls on all alike. Every row records
the 1-minute load average before and after it. Writes OUT/results.md,
OUT/results.json (versions, CPU flags, loads) and OUT/results.png (each
row's ratio to the best peer; below 1 the project is faster).
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import os
import pathlib
import platform
import subprocess
import sys
import tempfile
import time

# isort: off
import zoo  # noqa: F401  first: TensorFlow's environment (oneDNN, log level)

# isort: on
import keras
import keras_hub
import matplotlib
import matplotlib.pyplot as plt
import numpy as np
import tensorflow as tf
from ai_edge_litert import interpreter as litert

from export.saved_model import export_saved_model
from export.tflite import export_tflite
from zoo.checkpoints import load_checkpoint
from zoo.datasets.corpora import minilm_checkpoint_dir
from zoo.distill import Distiller, make_student
from zoo.models import BertEncoder, Classifier
from zoo.text.readers import calibration_and_validation, read_data
from zoo.train.optimization import make_adamw
from zoo.utils.latency import StepTimes, interleaved_latency_ms

HERE = pathlib.Path(__file__).resolve().parent
LENGTH = 128
ENCODERS = {
    "minilm": None,  # the installed real checkpoint
    "bert_base": dict(
        vocabulary_size=30522,
        num_layers=12,
        num_heads=12,
        hidden_dim=768,
        intermediate_dim=3072,
        max_sequence_length=512,
    ),
}


def _load():
    return round(os.getloadavg()[0], 2)


def _cpu_flags():
    try:
        text = pathlib.Path("/proc/cpuinfo").read_text()
    except OSError:
        return []
    flags = next(
        (
            line.split(":", 1)[1].split()
            for line in text.splitlines()
            if line.startswith("flags")
        ),
        [],
    )
    return sorted(f for f in flags if f.startswith(("avx", "fma", "amx", "vnni")))


def cpu_features(flags) -> dict:
    """What the CPU offers int8 and bfloat16 work, in the words the ratios
    depend on (LiteRT int8 ran 15.6x the float teacher on an AVX-512 VNNI
    machine, about 5x on an AVX2-only one): `{"int8": ..., "bf16": ...}`."""
    flags = set(flags)
    if "amx_int8" in flags:
        int8 = "AMX"
    elif "avx512_vnni" in flags:
        int8 = "AVX-512 VNNI"
    elif "avx_vnni" in flags:
        int8 = "AVX-VNNI"
    elif "avx2" in flags:
        int8 = "AVX2 only"
    else:
        int8 = "no AVX2"
    bf16 = [
        name
        for flag, name in (("amx_bf16", "AMX"), ("avx512_bf16", "AVX-512 BF16"))
        if flag in flags
    ]
    return {"int8": int8, "bf16": " and ".join(bf16) or "none"}


def _cpu_model():
    try:
        for line in pathlib.Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


# --- one process per thread count: every engine, interleaved ------------------


def _ids(batch, vocabulary=30522, seed=0):

    rng = np.random.default_rng(seed)
    ids = rng.integers(1000, vocabulary, (batch, LENGTH)).astype("int32")
    ids[:, 0], ids[:, -1] = 101, 102
    return ids


def _engines(name, work, threads, batch):
    """{engine: zero-argument callable running one forward pass}."""
    # The peers' runtimes come with the test and bench extras, not the runtime.
    import onnxruntime as ort
    import torch

    torch.set_num_threads(threads)
    ids = _ids(batch)
    zeros, ones = np.zeros_like(ids), np.ones_like(ids)
    calls = {}

    encoder = (
        load_checkpoint(work / "minilm_hf")[0]
        if name == "minilm"
        else BertEncoder(**ENCODERS[name], dropout=0.0)
    )
    x = {
        "token_ids": tf.constant(ids),
        "segment_ids": tf.constant(zeros),
        "padding_mask": tf.constant(ones),
    }
    zoo_fn = tf.function(
        lambda x: encoder(x, training=False)["sequence_output"], autograph=False
    )
    calls["project Keras"] = lambda: zoo_fn(x).numpy()

    saved = work / f"{name}_saved_model"
    if saved.exists():
        serve = tf.saved_model.load(str(saved)).signatures["serve_ids"]
        calls["project SavedModel"] = lambda: serve(
            token_ids=x["token_ids"],
            segment_ids=x["segment_ids"],
            padding_mask=x["padding_mask"],
        )

    config = (
        dict(
            vocabulary_size=30522,
            num_layers=6,
            num_heads=12,
            hidden_dim=384,
            intermediate_dim=1536,
            max_sequence_length=512,
        )
        if name == "minilm"
        else ENCODERS[name]
    )
    backbone = keras_hub.models.BertBackbone(**config, dropout=0.0)
    kh = {
        "token_ids": x["token_ids"],
        "segment_ids": x["segment_ids"],
        "padding_mask": x["padding_mask"],
    }
    kh_fn = tf.function(
        lambda x: backbone(x, training=False)["sequence_output"], autograph=False
    )
    calls["keras-hub"] = lambda: kh_fn(kh).numpy()

    model = torch.load(work / f"{name}_torch.pt", weights_only=False).eval()
    tids, tmask = (
        torch.from_numpy(ids.astype("int64")),
        torch.from_numpy(ones.astype("int64")),
    )

    def torch_call():
        with torch.inference_mode():
            return model(input_ids=tids, attention_mask=tmask).last_hidden_state.numpy()

    calls["HF torch"] = torch_call
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    feeds = {
        "input_ids": ids.astype("int64"),
        "attention_mask": ones.astype("int64"),
        "token_type_ids": zeros.astype("int64"),
    }
    for label, file in (("ORT fp32", f"{name}.onnx"), ("ORT int8", f"{name}_int8.onnx")):
        session = ort.InferenceSession(
            str(work / file), options, providers=["CPUExecutionProvider"]
        )
        wanted = {i.name for i in session.get_inputs()}
        feed = {k: v for k, v in feeds.items() if k in wanted}
        calls[label] = (lambda s, f: lambda: s.run(None, f))(session, feed)
    if batch == 1:
        inputs = {"token_ids": ids, "segment_ids": zeros, "padding_mask": ones}
        for mode in ("float32", "dynamic_int8"):
            path = work / f"{name}_tflite_{mode}" / "model.tflite"
            if not path.exists():
                continue
            interpreter = litert.Interpreter(model_path=str(path), num_threads=threads)
            runner = interpreter.get_signature_runner()
            calls[f"LiteRT {mode}"] = (lambda r: lambda: r(**inputs))(runner)
    return calls


def latency_worker(name, work, threads, rounds):
    """Runs in its own process: batch-1 latency (ms) at `threads`, and with 2
    threads also batch-8/32 throughput (examples/s)."""

    tf.config.threading.set_intra_op_parallelism_threads(threads)
    tf.config.threading.set_inter_op_parallelism_threads(1)

    rows = []
    load = _load()
    ms = interleaved_latency_ms(_engines(name, work, threads, 1), rounds=rounds)
    rows.append(
        {
            "row": f"{name} encoder, batch 1, {threads} thread(s)",
            "unit": "ms",
            "lower_is_better": True,
            "values": ms,
            "load": [load, _load()],
        }
    )
    if threads == 2:
        for batch in (8, 32):
            load = _load()
            ms = interleaved_latency_ms(
                _engines(name, work, threads, batch), rounds=max(3, rounds // 4), warmup=1
            )
            rows.append(
                {
                    "row": f"{name} encoder, batch {batch}, 2 threads",
                    "unit": "examples/s",
                    "lower_is_better": False,
                    "values": {k: 1000 * batch / v for k, v in ms.items()},
                    "load": [load, _load()],
                }
            )
    return rows


# --- artifacts, built once ------------------------------------------------------


def build_artifacts(name, work, tflite):
    """The torch model, its ONNX files, and the project's SavedModel and
    .tflite files for encoder `name`, under `work`."""
    # The peers' runtimes come with the test and bench extras, not the runtime.
    import torch
    import transformers
    from onnxruntime.quantization import QuantType, quantize_dynamic

    if name == "minilm":
        hf_dir = minilm_checkpoint_dir()
        if not (work / "minilm_hf").exists():
            (work / "minilm_hf").symlink_to(hf_dir)
        model = transformers.BertModel.from_pretrained(hf_dir, attn_implementation="eager")
        encoder, tokenizer = load_checkpoint(hf_dir)
    else:
        c = ENCODERS[name]
        model = transformers.BertModel(
            transformers.BertConfig(
                vocab_size=c["vocabulary_size"],
                hidden_size=c["hidden_dim"],
                num_hidden_layers=c["num_layers"],
                num_attention_heads=c["num_heads"],
                intermediate_size=c["intermediate_dim"],
            ),
            add_pooling_layer=True,
        )
        encoder = None
        tokenizer = None
    model.eval()
    torch.save(model, work / f"{name}_torch.pt")
    onnx = work / f"{name}.onnx"
    if not onnx.exists():

        class Encoder(torch.nn.Module):  # keyword arguments; the sequence output
            def __init__(self, bert):
                super().__init__()
                self.bert = bert

            def forward(self, input_ids, attention_mask, token_type_ids):
                return self.bert(
                    input_ids=input_ids,
                    attention_mask=attention_mask,
                    token_type_ids=token_type_ids,
                ).last_hidden_state

        ids = torch.from_numpy(_ids(1).astype("int64"))
        torch.onnx.export(
            Encoder(model),
            (ids, torch.ones_like(ids), torch.zeros_like(ids)),
            str(onnx),
            input_names=["input_ids", "attention_mask", "token_type_ids"],
            output_names=["last_hidden_state"],
            dynamic_axes={
                k: {0: "batch"} for k in ("input_ids", "attention_mask", "token_type_ids")
            },
            dynamo=False,
        )
        quantize_dynamic(
            str(onnx), str(work / f"{name}_int8.onnx"), weight_type=QuantType.QInt8
        )
    if encoder is None:
        if not tflite:
            return
        # BERT-Base: the same torch weights, through the project's converter.
        hf = work / f"{name}_hf"
        if not hf.exists():
            model.save_pretrained(hf)
            (hf / "vocab.txt").write_text(
                (minilm_checkpoint_dir() / "vocab.txt").read_text()
            )
        encoder, tokenizer = load_checkpoint(hf)
    classifier = Classifier(encoder, 5, labels=[f"c{i}" for i in range(5)], dropout=0.0)
    # Exports validate themselves (agreement with Keras) on real texts.
    _, texts, _, _ = calibration_and_validation("bbc")
    saved = work / f"{name}_saved_model"
    if not saved.exists():
        export_saved_model(
            classifier,
            tokenizer,
            work / "serving",
            name=name,
            version=1,
            sequence_length=LENGTH,
            validation_texts=texts,
        )
        (work / "serving" / name / "1").rename(saved)
    if tflite:
        for mode in ("float32", "dynamic_int8"):
            path = work / f"{name}_tflite_{mode}"
            if not path.exists():
                export_tflite(
                    classifier,
                    tokenizer,
                    path,
                    quantize=mode,
                    sequence_lengths=(LENGTH,),
                    validation_texts=texts,
                    # an untrained 5-way head: near-ties flip labels under
                    # int8; the bench measures speed (validation still runs)
                    allow_degraded=True,
                )


# --- fine-tuning and serving ----------------------------------------------------


def _hf_minilm_classifier():
    """HF transformers' MiniLM + a 5-way head on PyTorch, 2 threads."""
    # The test extra's PyTorch: a peer, not a runtime dependency.
    import torch
    import transformers

    torch.set_num_threads(2)
    return transformers.BertForSequenceClassification.from_pretrained(
        minilm_checkpoint_dir(), num_labels=5, attn_implementation="eager"
    )


def _torch_train_rate(parameters, loss_of, batch, steps):
    """Examples/s of `steps` PyTorch AdamW steps (lr 5e-5, gradients clipped
    to norm 1) after 2 warm-up steps; `loss_of(b)` is the loss of the
    examples in slice `b`."""
    # The test extra's PyTorch: a peer, not a runtime dependency.
    import torch

    parameters = list(parameters)
    opt = torch.optim.AdamW(parameters, lr=5e-5)
    times = []
    for i in range(steps + 2):
        t0 = time.perf_counter()
        loss_of(slice(i * batch, (i + 1) * batch)).backward()
        torch.nn.utils.clip_grad_norm_(parameters, 1.0)
        opt.step()
        opt.zero_grad()
        times.append(time.perf_counter() - t0)
    return batch * steps / sum(times[2:])


def finetune_worker(engine, steps):
    """Examples/s of `steps` training steps (after 2 warm-up steps) of MiniLM
    + a 5-way head, batch 16 x 128, AdamW, in this process."""

    batch = 16
    ids = _ids(batch * (steps + 2), seed=1)
    labels = np.random.default_rng(0).integers(0, 5, len(ids))
    if engine == "HF torch":
        # The test extra's PyTorch: a peer, not a runtime dependency.
        import torch

        model = _hf_minilm_classifier()
        model.train()
        mask = torch.ones(batch, LENGTH, dtype=torch.int64)
        return _torch_train_rate(
            model.parameters(),
            lambda b: (
                model(
                    input_ids=torch.from_numpy(ids[b].astype("int64")),
                    attention_mask=mask,
                    labels=torch.from_numpy(labels[b]),
                ).loss
            ),
            batch,
            steps,
        )

    tf.config.threading.set_intra_op_parallelism_threads(2)
    clock = StepTimes()
    x = {
        "token_ids": ids,
        "segment_ids": np.zeros_like(ids),
        "padding_mask": np.ones_like(ids),
    }
    if engine == "project":
        encoder, _ = load_checkpoint(minilm_checkpoint_dir())
        model = Classifier(encoder, 5, pooling="cls")
        model.compile(
            optimizer=make_adamw(model, 5e-5, steps + 2),
            loss={"logits": keras.losses.SparseCategoricalCrossentropy(from_logits=True)},
        )
        model.fit(
            x,
            {"logits": labels},
            batch_size=batch,
            epochs=1,
            shuffle=False,
            verbose=0,
            callbacks=[clock],
        )
    else:
        backbone = keras_hub.models.BertBackbone(
            vocabulary_size=30522,
            num_layers=6,
            num_heads=12,
            hidden_dim=384,
            intermediate_dim=1536,
            max_sequence_length=512,
        )
        model = keras_hub.models.BertTextClassifier(
            backbone, num_classes=5, preprocessor=None
        )
        model.compile(
            optimizer=keras.optimizers.AdamW(5e-5),
            loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        )
        model.fit(
            x,
            labels,
            batch_size=batch,
            epochs=1,
            shuffle=False,
            verbose=0,
            callbacks=[clock],
        )
    return batch * steps / sum(clock.times[2:])


def distill_worker(engine, steps):
    """Examples/s of `steps` distillation steps (after 2 warm-up steps):
    MiniLM + a 5-way head as the frozen teacher, a 2-layer student from its
    layers 0 and 3, DistilBERT's losses (soft targets at T=2 x5, hard x2,
    last-hidden-state cosine x1), AdamW, clipnorm 1, batch 16 x 128."""

    batch, temperature = 16, 2.0
    ids = _ids(batch * (steps + 2), seed=2)
    labels = np.random.default_rng(1).integers(0, 5, len(ids))
    if engine == "HF torch":
        # The test extra's PyTorch: a peer, not a runtime dependency.
        import torch
        import torch.nn.functional as F
        import transformers

        teacher = _hf_minilm_classifier()
        teacher.eval()
        config = transformers.BertConfig.from_dict(teacher.config.to_dict())
        config.num_hidden_layers = 2
        student = transformers.BertForSequenceClassification(config)
        picked = {0: 0, 3: 1}  # teacher layer -> student layer, as make_student's (0, 3)
        state = {}
        for key, value in teacher.state_dict().items():
            if ".layer." in key:
                index = int(key.split(".layer.")[1].split(".")[0])
                if index not in picked:
                    continue
                key = key.replace(f".layer.{index}.", f".layer.{picked[index]}.")
            state[key] = value
        student.load_state_dict(state)
        student.train()
        mask = torch.ones(batch, LENGTH, dtype=torch.int64)

        def loss_of(b):
            x = torch.from_numpy(ids[b].astype("int64"))
            with torch.no_grad():
                t = teacher(input_ids=x, attention_mask=mask, output_hidden_states=True)
            s = student(input_ids=x, attention_mask=mask, output_hidden_states=True)
            soft = (
                F.kl_div(
                    F.log_softmax(s.logits / temperature, -1),
                    F.softmax(t.logits / temperature, -1),
                    reduction="batchmean",
                )
                * temperature**2
            )
            hard = F.cross_entropy(s.logits, torch.from_numpy(labels[b]))
            cosine = (
                1 - F.cosine_similarity(t.hidden_states[-1], s.hidden_states[-1], dim=-1)
            ).mean()
            return 5 * soft + 2 * hard + cosine

        return _torch_train_rate(student.parameters(), loss_of, batch, steps)

    tf.config.threading.set_intra_op_parallelism_threads(2)
    clock = StepTimes()
    encoder, _ = load_checkpoint(minilm_checkpoint_dir())
    teacher = Classifier(encoder, 5, pooling="cls")
    student = make_student(teacher, 2, layer_map=(0, 3))
    distiller = Distiller(teacher, student, layer_map=(0, 3))
    distiller.compile(optimizer=make_adamw(student, 5e-5, steps + 2))
    distiller.optimizer.build(distiller._student_variables())  # as `zoo distill` does
    x = {
        "token_ids": ids,
        "segment_ids": np.zeros_like(ids),
        "padding_mask": np.ones_like(ids),
    }
    distiller.fit(
        x,
        {"logits": labels},
        batch_size=batch,
        epochs=1,
        shuffle=False,
        verbose=0,
        callbacks=[clock],
    )
    return batch * steps / sum(clock.times[2:])


def serving_worker(work, rounds):
    """Texts/s of the project's text-in SavedModel (serving_default) at batch
    1 / 8 / 32 on whole BBC test articles, 2 threads."""

    tf.config.threading.set_intra_op_parallelism_threads(2)
    articles, _ = read_data("bbc")  # the 426 BBC News test articles, whole
    serve = tf.saved_model.load(str(work / "minilm_saved_model")).signatures[
        "serving_default"
    ]
    values = {}
    for batch in (1, 8, 32):
        texts = tf.constant(articles[:batch])
        serve(text=texts)
        t0 = time.perf_counter()
        for _ in range(rounds):
            serve(text=texts)
        values[f"batch {batch}"] = batch * rounds / (time.perf_counter() - t0)
    return values


def _child(args):
    work = pathlib.Path(args.work)
    if args.child == "latency":
        result = latency_worker(args.encoder, work, args.threads, args.rounds)
    elif args.child == "finetune":
        result = finetune_worker(args.engine, args.steps)
    elif args.child == "distill":
        result = distill_worker(args.engine, args.steps)
    elif args.child == "serving":
        result = serving_worker(work, args.rounds)
    else:
        result = build_artifacts(args.encoder, work, args.tflite)
    print("RESULT " + json.dumps(result))


def _run_child(*argv):
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL=os.environ.get("TF_CPP_MIN_LOG_LEVEL", "3"))
    run = subprocess.run(
        [sys.executable, __file__, *argv],
        capture_output=True,
        text=True,
        env=env,
        cwd=HERE.parent,
    )
    if run.returncode != 0:
        raise SystemExit(f"bench child {argv} failed:\n{run.stderr[-4000:]}")
    line = [x for x in run.stdout.splitlines() if x.startswith("RESULT ")][-1]
    return json.loads(line[len("RESULT ") :])


# --- the report -----------------------------------------------------------------


def _ours(engine):
    return engine.startswith(("project", "LiteRT"))


def _ratios(row, like_for_like=False):
    """(best peer, {our engine: ratio}): our time over the best peer's, or
    the best peer's rate over ours. `like_for_like`: an int8 engine against
    int8 peers only, a float one against float peers."""
    values = row["values"]
    pick = min if row["lower_is_better"] else max
    bests, ratios = [], {}
    for engine, value in values.items():
        if not _ours(engine):
            continue
        peers = {
            k: v
            for k, v in values.items()
            if not _ours(k) and (not like_for_like or ("int8" in k) == ("int8" in engine))
        }
        if not peers:
            continue
        best = pick(peers, key=peers.get)
        bests.append(best)
        ratios[engine] = (
            value / peers[best] if row["lower_is_better"] else peers[best] / value
        )
    return (bests[0] if bests and not like_for_like else None), ratios


def write_report(rows, meta, out):
    out.mkdir(parents=True, exist_ok=True)
    for row in rows:
        row["best_peer"], row["ratio_to_best_peer"] = _ratios(row)
        row["ratio_like_for_like"] = _ratios(row, like_for_like=True)[1]
    (out / "results.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=2))
    lines = [
        "# `make bench`: the project and its peers, one run",
        "",
        f"{meta['date']}, {meta['cpu']} ({meta['cores']} cores; {', '.join(meta['cpu_flags'])}); "
        f"int8: {cpu_features(meta['cpu_flags'])['int8']}, bfloat16: "
        f"{cpu_features(meta['cpu_flags'])['bf16']}; load {meta.get('load_at_start', '?')} at "
        "the start (the ratios depend on all three: compare runs on one machine only); "
        f"{'quick' if meta['quick'] else 'full'} run, {meta['seconds']:.0f} s. Versions: "
        + ", ".join(f"{k} {v}" for k, v in meta["versions"].items())
        + ".",
        "",
        "Ratio = the project's time over the best peer's (for rates: the best peer's rate "
        "over the project's), so **below 1.00 the project is faster**; like for like = "
        "against the best peer of the same precision (int8 against ORT int8, float against "
        "the float peers). Load = the 1-minute load average before / after the row.",
        "",
    ]
    for row in rows:
        lines += [
            f"## {row['row']} ({row['unit']}, "
            f"{'lower' if row['lower_is_better'] else 'higher'} is better)",
            "",
            "| engine | value | ratio to best peer | like for like |",
            "|---|---|---|---|",
        ]
        for k, v in row["values"].items():
            ratio, like = (
                row["ratio_to_best_peer"].get(k),
                row["ratio_like_for_like"].get(k),
            )
            tag = " (best peer)" if k == row["best_peer"] else ""
            lines.append(
                f"| {k}{tag} | {v:.2f} | {'' if ratio is None else f'{ratio:.2f}'} | "
                f"{'' if like is None else f'{like:.2f}'} |"
            )
        lines += [
            "",
            f"load {row['load'][0]} / {row['load'][1]}"
            + (f"; {row['note']}" if row.get("note") else ""),
            "",
        ]
    # bench/backends.py's section (`make bench-backends`) is kept.
    previous = (out / "results.md").read_text() if (out / "results.md").exists() else ""
    begin, end = "<!-- bench/backends.py: begin -->", "<!-- bench/backends.py: end -->"
    if begin in previous and end in previous:
        kept = previous[previous.index(begin) : previous.index(end) + len(end)]
        lines += ["", kept, ""]
    (out / "results.md").write_text("\n".join(lines))
    matplotlib.use("Agg")
    bars = [
        (f"{r['row']}: {k}", v) for r in rows for k, v in r["ratio_to_best_peer"].items()
    ]
    fig, ax = plt.subplots(figsize=(9, 0.3 * len(bars) + 1))
    ax.barh(
        [b[0] for b in bars][::-1],
        [b[1] for b in bars][::-1],
        color=["tab:green" if b[1] <= 1 else "tab:red" for b in bars][::-1],
    )
    ax.axvline(1.0, color="black", lw=1)
    ax.set_xlabel("project / best peer (below 1: the project is faster)")
    ax.tick_params(axis="y", labelsize=7)
    fig.tight_layout()
    fig.savefig(out / "results.png", dpi=110)
    plt.close(fig)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--quick", action="store_true", help="MiniLM only, fewer rounds (a few minutes)"
    )
    parser.add_argument("--out", type=pathlib.Path, default=HERE)
    parser.add_argument(
        "--work",
        type=pathlib.Path,
        default=None,
        help="where artifacts are built and kept (default: a temporary folder)",
    )
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--encoder", help=argparse.SUPPRESS)
    parser.add_argument("--engine", help=argparse.SUPPRESS)
    parser.add_argument("--threads", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--rounds", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--steps", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--tflite", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return _child(args)
    started = time.time()
    load_at_start = _load()
    work = args.work or pathlib.Path(tempfile.mkdtemp(prefix="zoo-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    encoders = ["minilm"] if args.quick else ["minilm", "bert_base"]
    rounds = 10 if args.quick else 30
    for name in encoders:
        print(f"building artifacts for {name} in {work}", flush=True)
        _run_child(
            "--child",
            "build",
            "--encoder",
            name,
            "--work",
            str(work),
            *(["--tflite"] if name == "minilm" or not args.quick else []),
        )
    rows = []
    for name in encoders:
        for threads in (1, 2):
            print(f"{name}: encoder latency, {threads} thread(s)", flush=True)
            rows += _run_child(
                "--child",
                "latency",
                "--encoder",
                name,
                "--work",
                str(work),
                "--threads",
                str(threads),
                "--rounds",
                str(rounds),
            )
    # Training rows: each engine in a fresh process per round, the engines'
    # order rotated every round, the median round reported: one process per
    # engine in turn put load swings into the ratio (1.18-1.31x across runs).
    training_rounds = 2 if args.quick else 3
    for child, title, engines in (
        ("finetune", "MiniLM fine-tuning", ["project", "HF torch", "keras-hub"]),
        ("distill", "MiniLM -> 2-layer student distillation", ["project", "HF torch"]),
    ):
        rates = {engine: [] for engine in engines}
        load = _load()
        for r in range(training_rounds):
            for engine in engines[r % len(engines) :] + engines[: r % len(engines)]:
                print(f"{child}: {engine}, round {r + 1} of {training_rounds}", flush=True)
                rates[engine].append(
                    _run_child(
                        "--child",
                        child,
                        "--engine",
                        engine,
                        "--work",
                        str(work),
                        "--steps",
                        "6" if args.quick else "12",
                    )
                )
        rows.append(
            {
                "row": f"{title}, batch 16 x 128, 2 threads",
                "unit": "examples/s",
                "lower_is_better": False,
                "values": {e: float(np.median(v)) for e, v in rates.items()},
                "rounds": rates,
                "load": [load, _load()],
                "note": f"median of {training_rounds} rounds, a fresh process per engine "
                "and round; ranges: "
                + ", ".join(f"{e} {min(v):.2f}-{max(v):.2f}" for e, v in rates.items()),
            }
        )
    print("text-in serving", flush=True)
    load = _load()
    serving = _run_child(
        "--child", "serving", "--work", str(work), "--rounds", "3" if args.quick else "10"
    )
    rows.append(
        {
            "row": "MiniLM text-in SavedModel (whole BBC articles), 2 threads",
            "unit": "texts/s",
            "lower_is_better": False,
            "values": {f"project {k}": v for k, v in serving.items()},
            "load": [load, _load()],
            "note": f"no peer serves text in; batch 32 over batch 1: "
            f"{serving['batch 32'] / serving['batch 1']:.2f}x",
        }
    )

    versions = {}
    for package in (
        "tensorflow",
        "keras",
        "keras-hub",
        "torch",
        "transformers",
        "onnxruntime",
        "ai-edge-litert",
    ):
        try:
            versions[package] = importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:
            versions[package] = None
    meta = {
        "date": time.strftime("%Y-%m-%d %H:%M"),
        "quick": args.quick,
        "cpu": _cpu_model(),
        "cpu_features": cpu_features(_cpu_flags()),
        "load_at_start": load_at_start,
        "cores": os.cpu_count(),
        "cpu_flags": _cpu_flags(),
        "versions": versions,
        "seconds": time.time() - started,
    }
    write_report(rows, meta, args.out)
    print((args.out / "results.md").read_text())


if __name__ == "__main__":
    sys.exit(main())
