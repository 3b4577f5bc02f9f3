#!/usr/bin/env python3
"""Plots a pipeline-bench report: python3 bench/plot-pipeline.py DIR/report.csv OUTDIR

Writes OUTDIR/pipeline-CAPTURE.png for each capture: steady Mpps of every
pipeline, engine and tool measured (log scale, coloured by kind), with dd's
page-cache read of the same file as a dashed line (the floor, in packets a
second of that file).  Needs matplotlib (Debian: python3-matplotlib); exits 77
without it.
"""
import csv
import os
import sys
from collections import defaultdict

try:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
except ImportError:
    print("SKIP: matplotlib is not installed (apt install python3-matplotlib)")
    sys.exit(77)

# pipeline-bench.py's kinds, in the order the bars are drawn.
KINDS = {"source": "tab:blue", "element": "tab:green", "encoder": "tab:olive", "flows": "tab:cyan",
         "classify": "tab:purple", "engine": "tab:gray", "reader": "tab:orange", "text": "tab:red",
         "flowmeter": "tab:brown", "dpi-peer": "tab:pink"}


def main():
    if len(sys.argv) != 3:
        print(__doc__.split("\n")[0])
        return 2
    with open(sys.argv[1], newline="") as f:
        rows = [r for r in csv.DictReader(f)
                if r["section"] == "measure" and r["metric"] == "mpps" and r["value"]]
    by_capture = defaultdict(list)
    for r in rows:
        by_capture[r["capture"]].append((r["kind"], r["item"], float(r["value"])))
    written = []
    for capture, figures in by_capture.items():
        floor = next((v for k, _, v in figures if k == "floor"), None)
        bars = sorted(((k, i, v) for k, i, v in figures if k in KINDS and v > 0),
                      key=lambda f: list(KINDS).index(f[0]))
        if not bars:
            continue
        fig, ax = plt.subplots(figsize=(9, 0.32 * len(bars) + 1.6))
        ys = range(len(bars))
        ax.barh(ys, [v for _, _, v in bars], color=[KINDS[k] for k, _, _ in bars])
        ax.set_yticks(list(ys), [i for _, i, _ in bars], fontsize=8)
        ax.invert_yaxis()
        ax.set_xscale("log")
        ax.set_xlabel("steady Mpps (log scale)")
        if floor:
            ax.axvline(floor, color="black", linestyle="--", linewidth=1)
            ax.text(floor, -0.8, " dd %.3g Mpps" % floor, fontsize=8, va="bottom")
        for y, (_, _, v) in zip(ys, bars):
            ax.text(v, y, " %.3g" % v, va="center", fontsize=7)
        handles = [plt.Rectangle((0, 0), 1, 1, color=c) for k, c in KINDS.items()
                   if any(b[0] == k for b in bars)]
        ax.legend(handles, [k for k in KINDS if any(b[0] == k for b in bars)], fontsize=7,
                  loc="lower right")
        ax.set_title("%s: pipelines, engines and tools on the same capture" % capture, fontsize=10)
        fig.tight_layout()
        path = os.path.join(sys.argv[2], "pipeline-%s.png" % capture)
        fig.savefig(path, dpi=110)
        plt.close(fig)
        written.append(path)
    print("plot: " + (", ".join(written) if written else "nothing to plot"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
