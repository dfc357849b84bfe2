"""`make bench`'s report (bench/peers.py): each row's ratio to the best peer
(and like for like; a bfloat16 training row also each engine's rate over its
own float32 rate), written as results.json, results.md (keeping
bench/backends.py's section) and results.png. A row with `"compare": False`
(the bfloat16 accuracy check) is a table of values without ratios."""

from __future__ import annotations

import json

import matplotlib
import matplotlib.pyplot as plt

from zoo.utils.provenance import cpu_features


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
        if row.get("compare", True):
            row["best_peer"], row["ratio_to_best_peer"] = _ratios(row)
            row["ratio_like_for_like"] = _ratios(row, like_for_like=True)[1]
        else:
            row["best_peer"], row["ratio_to_best_peer"] = None, {}
            row["ratio_like_for_like"] = {}
    (out / "results.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=2))
    lines = [
        "# `make bench`: the project and its peers, one run",
        "",
        f"{meta['date']}, {meta['cpu']} ({meta['cores']} cores; {', '.join(meta['cpu_flags'])}); "
        f"int8: {cpu_features(meta['cpu_flags'])['int8']}, bfloat16: "
        f"{cpu_features(meta['cpu_flags'])['bf16']}; load {meta.get('load_at_start', '?')} at "
        "the start (the ratios depend on all three: compare runs on one machine only); "
        f"{'quick' if meta['quick'] else 'full'} run"
        f"{', training rows only' if meta.get('training_only') else ''}, "
        f"{meta['seconds']:.0f} s; {meta.get('bfloat16', 'bfloat16 rows not asked for')}. "
        "Versions: " + ", ".join(f"{k} {v}" for k, v in meta["versions"].items()) + ".",
        "",
        "Ratio = the project's time over the best peer's (for rates: the best peer's rate "
        "over the project's), so **below 1.00 the project is faster**; like for like = "
        "against the best peer of the same precision (int8 against ORT int8, float against "
        "the float peers). A bfloat16 training row races bfloat16 against bfloat16; its "
        "last column is each engine's bfloat16 rate over its own float32 rate (above "
        "1.00 bfloat16 is faster). Load = the 1-minute load average before / after the "
        "row.",
        "",
    ]
    for row in rows:
        lines += [
            f"## {row['row']} ({row['unit']}, "
            f"{'lower' if row['lower_is_better'] else 'higher'} is better)",
            "",
            *_table(row),
            "",
            f"load {row['load'][0]} / {row['load'][1]}"
            + (f"; {row['note']}" if row.get("note") else ""),
            "",
        ]
    # bench/backends.py's section (`make bench-backends`) is kept.
    _write_markdown(out / "results.md", lines)
    _plot(rows, out / "results.png")


def _table(row):
    """A row's markdown table: engine, value and, unless the row has
    `"compare": False`, its ratios (and bfloat16 over float32 where given)."""
    if not row.get("compare", True):
        digits = 4 if row["unit"] == "accuracy" else 2
        return [
            "| engine | value |",
            "|---|---|",
            *(f"| {k} | {v:.{digits}f} |" for k, v in row["values"].items()),
        ]
    over = row.get("over_float32")
    lines = [
        "| engine | value | ratio to best peer | like for like |"
        + (" bfloat16 over own float32 |" if over else ""),
        "|---|---|---|---|" + ("---|" if over else ""),
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
            + (f" {over[k]:.2f} |" if over else "")
        )
    return lines


def _write_markdown(path, lines):
    """results.md from `lines`, keeping bench/backends.py's section of the
    file already there."""
    previous = path.read_text() if path.exists() else ""
    begin, end = "<!-- bench/backends.py: begin -->", "<!-- bench/backends.py: end -->"
    if begin in previous and end in previous:
        kept = previous[previous.index(begin) : previous.index(end) + len(end)]
        lines += ["", kept, ""]
    path.write_text("\n".join(lines))


def _plot(rows, path):
    """results.png: each ratio to the best peer as a bar (green: the project
    is faster)."""
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
    fig.savefig(path, dpi=110)
    plt.close(fig)
