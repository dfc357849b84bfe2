"""The demo's report stage: OUT/report.json, OUT/report.md (the table of every
model and artifact, the headline, the linear baseline's sentence) and the
plots OUT/tradeoffs.png and OUT/training_curves.png."""

from __future__ import annotations

import dataclasses
import json

import matplotlib
import matplotlib.pyplot as plt

from zoo.demo.common import BASELINE_FORMAT, PHONE_MODES, STAGES, Stages, _log, _phone
from zoo.utils.atomic import atomic_file
from zoo.utils.provenance import machine, machine_line


def _headline(rows, config):
    """Each int8 student .tflite against the float32 teacher .tflite (same
    runtime, same thread count); accuracy against the Keras teacher."""
    by = {(r["model"], r["format"], r["quantization"]): r for r in rows}
    teacher = by.get(("teacher", "tflite", "float32"))
    teacher_keras = by[("teacher", "keras", "float32")]
    out = {}
    for mode in PHONE_MODES:
        student = by.get((_phone(config), "tflite", mode))
        if not (teacher and student):
            continue
        out[mode] = {
            "student": f"{_phone(config)} {mode} .tflite, {student['vocabulary']:,} word pieces",
            "teacher": "teacher float32 .tflite",
            "size_ratio": teacher["size_mb"] / student["size_mb"],
            "speedup": teacher["latency_ms"] / student["latency_ms"],
            "accuracy_ratio": student["accuracy"] / teacher_keras["accuracy"],
            "teacher_accuracy": teacher_keras["accuracy"],
            "student_accuracy": student["accuracy"],
            "agreement_with_teacher": student["agreement_with_teacher"],
        }
    # The best phone model: the smallest file within 99% of the teacher's
    # accuracy (then the fastest).
    good = [
        (h["size_ratio"], h["speedup"], mode)
        for mode, h in out.items()
        if h["accuracy_ratio"] >= 0.99
    ]
    if good:
        out["best"] = dict(out[max(good)[2]], mode=max(good)[2])
    return out


def android_pick(headline):
    """(mode, why) of the phone file `--android-assets` ships: the report's
    best phone model (BEST_RULE), else, when no phone file keeps 99% of the
    teacher's accuracy, the most accurate one (then the smallest)."""
    best = headline.get("best")
    if best:
        return best["mode"], "the report's best phone model"
    modes = [(h["student_accuracy"], h["size_ratio"], m) for m, h in headline.items()]
    if not modes:
        raise ValueError(
            "the report has no phone .tflite rows: re-run the demo with --force"
        )
    *_, mode = max(modes)
    return mode, "no phone file keeps 99% of the teacher's accuracy: the most accurate"


# How the report picks its phone model, said where it names it.
BEST_RULE = (
    "Best phone model (the smallest file that keeps 99% of the teacher's accuracy, "
    "then the fastest): "
)


def _headline_summary(headline):
    """The report's headline: one line per phone file, the best one first
    (marked), then the other modes in their order. `headline["best"]` is a
    copy of one mode's entry (with that `mode`), so that mode is not listed
    a second time."""
    best = headline.get("best")
    entries = [("best", best)] if best else []
    entries += [
        (mode, h)
        for mode, h in headline.items()
        if mode != "best" and not (best and mode == best["mode"])
    ]
    return "\n".join(
        f"- {BEST_RULE if key == 'best' else ''}**{h['student']}** vs "
        f"{h['teacher']}: {h['size_ratio']:.1f}x smaller, "
        f"{h['speedup']:.1f}x faster, accuracy {h['student_accuracy']:.4f} vs "
        f"{h['teacher_accuracy']:.4f} ({100 * h['accuracy_ratio']:.1f}% of the teacher's), "
        f"agreement with the teacher {h['agreement_with_teacher']:.4f}."
        for key, h in entries
    )


def _table(rows):
    head = (
        "| model | format | size MB | latency ms | accuracy | agreement with teacher "
        "| validation |\n|---|---|---:|---:|---:|---:|---|"
    )
    lines = [head]
    for r in rows:
        fmt = r["format"] if r["format"] != "tflite" else f"tflite {r['quantization']}"
        latency = "-" if r["latency_ms"] is None else f"{r['latency_ms']:.1f}"
        if r["format"] == BASELINE_FORMAT:
            what = f"{r['description']}, {r['features']:,} features"
        else:
            vocabulary = (
                ""
                if r.get("vocabulary", 30522) == 30522
                else (f", {r['vocabulary']:,} pieces")
            )
            # The teacher's width (MiniLM's 384) goes unsaid.
            hidden = "" if r.get("hidden", 384) == 384 else f", hidden {r['hidden']}"
            what = f"{r['layers']} layers{hidden}{vocabulary}"
        lines.append(
            f"| {r['model']} ({what}) | {fmt} | {r['size_mb']:.1f} | "
            f"{latency} | "
            f"{r['accuracy']:.4f} | {r['agreement_with_teacher']:.4f} | "
            f"{r.get('validation', '-')} |"
        )
    return "\n".join(lines)


def baseline_sentence(rows, sequence_length):
    """One plain sentence when the linear baseline's accuracy is within one
    point (0.01) of the best BERT row's or above it: the reader learns that
    on this task BERT's size and latency buy little or no accuracy. Empty
    when the baseline is further below, or absent (a run measured before
    the demo had one)."""
    base = next((r for r in rows if r["format"] == BASELINE_FORMAT), None)
    models = [r for r in rows if r["format"] != BASELINE_FORMAT]
    if base is None or not models:
        return ""
    best = max(models, key=lambda r: r["accuracy"])  # the first of equals: table order
    gap = base["accuracy"] - best["accuracy"]
    if gap < -0.01:
        return ""
    if gap > 0:
        relation, verdict = "above", "buy no accuracy"
    elif gap == 0:
        relation, verdict = "equal to", "buy no accuracy"
    else:
        relation, verdict = "within one point of", "buy less than one point of accuracy"
    fmt = best["format"] if best["format"] != "tflite" else f"tflite {best['quantization']}"
    return (
        f"A linear TF-IDF model ({base['description']}, fitted in "
        f"{base['train_seconds']:.1f} s on the same {base['num_train']:,} training "
        f"articles) scores {base['accuracy']:.3f} here, {relation} the best BERT "
        f"model's {best['accuracy']:.3f} ({best['model']} {fmt}), at "
        f"{base['latency_ms']:.1f} ms an article on one CPU and {base['size_mb']:.1f} MB: "
        f"on this task the BERT models' size and latency {verdict}. (The linear model "
        f"reads each whole article; the BERT models read its first {sequence_length} "
        "tokens.)" + _paired_clause(base)
    )


def _paired_clause(base):
    """The baseline and the teacher article by article (the measure stage's
    `against_teacher`; absent in runs measured before it was recorded)."""
    paired = base.get("against_teacher")
    if not paired:
        return ""
    verdict = (
        "too few to call either better"
        if paired["p_value"] >= 0.05
        else "more than chance would give"
    )
    return (
        f" Article by article, the baseline alone is right on {paired['baseline_only']} "
        f"and the teacher alone on {paired['model_only']} (exact McNemar test "
        f"p = {paired['p_value']:.2f}): {verdict}."
    )


def _plots(out, rows):
    matplotlib.use("Agg")

    markers = {
        "keras": "o",
        "saved_model": "s",
        "float32": "^",
        "float16": "v",
        "dynamic_int8": "D",
        "int8": "X",
        "int4": "P",
        BASELINE_FORMAT: "*",
    }
    fig, axes = plt.subplots(1, 2, figsize=(12, 5.2))
    for ax, key, xlabel in (
        (axes[0], "latency_ms", "batch-1 latency, ms (log scale)"),
        (axes[1], "size_mb", "size, MB (log scale)"),
    ):
        for r in rows:
            if r[key] is None:
                continue
            kind = r["format"] if r["format"] != "tflite" else r["quantization"]
            name = {
                "keras": "Keras",
                "saved_model": "SavedModel",
                BASELINE_FORMAT: "(TF-IDF + LinearSVC)",
            }.get(kind, f".tflite {kind}")
            color = {"teacher": "tab:blue", "linear baseline": "tab:gray"}.get(
                r["model"], "tab:orange"
            )
            ax.scatter(
                r[key],
                r["accuracy"],
                s=60,
                marker=markers.get(kind, "o"),
                color=color,
                label=f"{r['model']} {name}",
                edgecolors="black",
                linewidths=0.5,
            )
        ax.set_xlabel(xlabel)
        ax.set_ylabel("BBC News test accuracy")
        ax.set_xscale("log")
        ax.grid(alpha=0.3)
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=5, fontsize=8, frameon=False)
    fig.suptitle(
        "Every model and artifact of the demo: teacher (blue), student (orange), "
        "linear baseline (grey)"
    )
    fig.tight_layout(rect=(0, 0.1, 1, 1))
    fig.savefig(out / "tradeoffs.png", dpi=110)
    plt.close(fig)

    runs = [("teacher", "fine-tuning the teacher")] + [
        (p.name, f"distilling {p.name}") for p in sorted(out.glob("student*"))
    ]
    runs = [(n, t) for n, t in runs if (out / n / "curve.json").is_file()]
    fig, axes = plt.subplots(1, max(1, len(runs)), figsize=(6 * max(1, len(runs)), 4.2))
    axes = [axes] if len(runs) <= 1 else list(axes)
    for ax, (name, title) in zip(axes, runs):
        curve = json.loads((out / name / "curve.json").read_text())
        steps = curve["steps"]
        keys = [k for k in steps[0] if k.endswith("loss")] if steps else []
        for key in keys:
            ys = [s[key] for s in steps]
            smooth, acc = [], None
            for y in ys:
                acc = y if acc is None else 0.9 * acc + 0.1 * y
                smooth.append(acc)
            ax.plot([s["step"] for s in steps], smooth, label=f"{key} (train, smoothed)")
        val = [(e["step"], e["val_loss"]) for e in curve["epochs"] if "val_loss" in e]
        if val:
            ax.plot(*zip(*val), "ko--", label="val_loss (epoch end)")
        ax.set_title(title)
        ax.set_xlabel("step")
        ax.set_yscale("log")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out / "training_curves.png", dpi=110)
    plt.close(fig)


def stage_report(out, config, args_info):
    """OUT/report.json, OUT/report.md and the plots, from OUT/measurements.json
    and OUT/stages.json; the table and the headline also go to the terminal."""
    measured = json.loads((out / "measurements.json").read_text())
    rows = measured["rows"]
    headline = _headline(rows, config)
    report = {
        "config": dataclasses.asdict(config),
        "headline": headline,
        "rows": rows,
        "stages": Stages(out).done,
        "texts": measured["texts"],
        "sequence_length": measured["sequence_length"],
        # Speed ratios depend on the CPU's int8 and bf16 features and the
        # load (taken here, as the measurements end).
        "machine": machine(),
        **args_info,
    }
    with atomic_file(out / "report.json", "w") as f:
        json.dump(report, f, indent=2)
    _plots(out, rows)
    with atomic_file(out / "report.md", "w") as f:
        f.write(report_markdown(report))
    _log("\n" + _table(rows))
    for text in (
        _headline_summary(headline),
        baseline_sentence(rows, report["sequence_length"]),
    ):
        if text:
            _log("\n" + text)
    return {"headline": headline}


def report_markdown(report):
    """OUT/report.md from the report dict (what OUT/report.json holds): the
    table, the headline, the linear baseline's sentence when it is within a
    point of the best model, the pruning figures, the plots, stage times, the
    machine and versions."""
    rows, stages = report["rows"], report["stages"]
    phone = f"student{report['config']['students'][0]}"
    lines = [
        "# zoo demo report",
        "",
        f"Teacher: all-MiniLM-L6-v2 fine-tuned on BBC News; students distilled from it. "
        f"Accuracy on the {report['texts']} articles of the fixed BBC News test split at "
        f"sequence length {report['sequence_length']}; latency is the median batch-1 time "
        "(LiteRT interpreter with 1 thread for .tflite, every file timed in one interleaved "
        "run; the TF1 session loader for SavedModel; TensorFlow for Keras"
        + (
            "; for the linear baseline, scikit-learn classifying one whole test article "
            "at a time on one CPU)."
            if any(r["format"] == BASELINE_FORMAT for r in rows)
            else ")."
        ),
        "",
        _table(rows),
        "",
    ]
    summary = _headline_summary(report["headline"])
    if summary:
        lines += ["Headline:", "", summary, ""]
    sentence = baseline_sentence(rows, report["sequence_length"])
    if sentence:
        lines += [sentence, ""]
    pruned = stages.get("prune", {}).get("result")
    if pruned:
        lines += [
            f"Vocabulary pruning ({phone}, `zoo prune`): "
            f"{pruned['vocabulary_before']:,} -> {pruned['vocabulary_after']:,} word "
            f"pieces, {pruned['parameters_before']:,} -> "
            f"{pruned['parameters_after']:,} parameters, test accuracy "
            f"{pruned['accuracy_before']:.4f} -> {pruned['accuracy_after']:.4f}; "
            f"{pruned['test_texts_tokenized_differently']} of {pruned['test_texts']} "
            "test articles tokenize differently (a word that used a piece the training "
            "articles never produced splits into shorter pieces). Every .tflite "
            "artifact also holds `mediapipe.tflite`, the file MediaPipe Tasks' "
            "TextClassifier runs as it is.",
            "",
        ]
    lines += [
        "![accuracy against latency and size](tradeoffs.png)",
        "",
        "![training curves](training_curves.png)",
        "",
        "Stage times (s): "
        + ", ".join(f"{k} {v['seconds']}" for k, v in stages.items() if k in STAGES),
        "",
        machine_line(report.get("machine") or {}),
        "",
        f"Versions: {json.dumps(report.get('versions'))}; git revision "
        f"{report.get('git_revision')}.",
        "",
    ]
    return "\n".join(lines)
