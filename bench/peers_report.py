"""`make bench`'s report (bench/peers.py): each row's ratio to the best peer
(and like for like), written as results.json, results.md (keeping
bench/backends.py's section) and results.png."""

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
