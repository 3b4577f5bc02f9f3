#!/usr/bin/env python3
"""Plots of a gpupacket-bench report: python3 bench/plot.py DIR/report.csv OUTDIR

Writes into OUTDIR:
  latency-WORKLOAD.png     per-batch latency p50 (solid) and p99 (dashed) vs batch size,
                           one line per mode, one panel per traffic profile (section B)
  throughput-WORKLOAD.png  Mpps vs batch size, one line per mode (section B)
  memory-kinds.png         H2D and D2H bandwidth vs transfer size per host memory kind (A)
Needs matplotlib (Debian: python3-matplotlib); exits 77 without it.
"""
import csv
import os
import re
import sys
from collections import defaultdict

try:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
except ImportError:
    print("SKIP: matplotlib is not installed (apt install python3-matplotlib)")
    sys.exit(77)

# Profiles in the bench's order (bench/workloads.cpp profiles()); others after them.
PROFILES = ["64B", "imix", "1500B", "pcap-imix", "pcap-1500B", "http-imix", "http-1500B",
            "dense-imix", "dense-1500B"]


def read_rows(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def number(text):
    try:
        v = float(text)
    except ValueError:
        return None
    return None if v != v else v  # NaN


def slug(name):
    return re.sub(r"[^A-Za-z0-9]+", "-", name.replace("+", " plus ")).strip("-")


def grid(rows, metric):
    """(workload, profile, mode) -> sorted [(batch, value)] of section B grid rows."""
    out = defaultdict(list)
    for r in rows:
        if r["section"] != "B" or r["item"] != "grid" or r["metric"] != metric:
            continue
        v = number(r["value"])
        if v is not None and v > 0:
            out[(r["workload"], r["profile"], r["mode"])].append((int(r["batch_packets"]), v))
    for k in out:
        out[k].sort()
    return out


def engine_order(rows):
    """The engines in the order the bench writes each grid point's rows: its
    engine list, which follows the product's table of modes (gpu/engine.h
    kModes), then the cpu-Nx1 column.  An engine first seen in a point goes
    right after the one before it there."""
    order, last = [], {}
    for r in rows:
        if r["section"] != "B" or r["item"] != "grid":
            continue
        point, engine = (r["profile"], r["workload"], r["batch_packets"]), r["mode"]
        if engine not in order:
            before = last.get(point)
            order.insert(order.index(before) + 1 if before in order else 0, engine)
        last[point] = engine
    return order


def mode_order(modes, order):
    return [m for m in order if m in modes] + sorted(m for m in modes if m not in order)


def plot_grid(rows, outdir, kind):
    if kind == "latency":
        series = {"p50": grid(rows, "p50"), "p99": grid(rows, "p99")}
        ylabel = "latency per batch (us)"
    else:
        series = {"mpps": grid(rows, "mpps")}
        ylabel = "throughput (Mpps)"
    main = next(iter(series.values()))
    order = engine_order(rows)
    workloads = []
    for (w, _, _) in main:
        if w not in workloads:
            workloads.append(w)
    written = []
    for w in workloads:
        present = [k[1] for k in main if k[0] == w]
        profiles = [p for p in PROFILES if p in present]
        profiles += sorted(set(p for p in present if p not in PROFILES))
        if not profiles:
            continue
        cols = min(len(profiles), 3)
        rows_ = (len(profiles) + cols - 1) // cols
        fig, axes = plt.subplots(rows_, cols, figsize=(5.5 * cols, 4.5 * rows_), squeeze=False)
        for ax in axes.flat[len(profiles):]:
            ax.set_visible(False)
        for ax, p in zip(axes.flat, profiles):
            modes = mode_order({k[2] for k in main if k[0] == w and k[1] == p}, order)
            for i, m in enumerate(modes):
                color = "C%d" % (i % 10)
                for name, style in (("p50", "-"), ("p99", "--"), ("mpps", "-")):
                    pts = series.get(name, {}).get((w, p, m))
                    if not pts:
                        continue
                    ax.plot([b for b, _ in pts], [v for _, v in pts], style, color=color, marker="o",
                            markersize=3, label=m if name != "p99" else None)
            ax.set_xscale("log", base=2)
            ax.set_yscale("log")
            ax.set_xlabel("batch size (packets)")
            ax.set_ylabel(ylabel)
            ax.set_title("%s, %s" % (p, w))
            ax.grid(True, which="both", alpha=0.3)
            ax.legend(fontsize=7)
        if kind == "latency":
            fig.suptitle("engine-only latency, one batch at a time: p50 solid, p99 dashed")
        else:
            fig.suptitle("engine-only throughput, every slot busy")
        fig.tight_layout()
        path = os.path.join(outdir, "%s-%s.png" % (kind, slug(w)))
        fig.savefig(path, dpi=110)
        plt.close(fig)
        written.append(path)
    return written


def plot_memory_kinds(rows, outdir):
    data = defaultdict(list)  # (direction, kind) -> [(bytes, GB/s)]
    for r in rows:
        if r["section"] != "A" or r["item"] != "memory-kinds":
            continue
        m = re.match(r"(h2d|d2h)_gbps@(\d+)$", r["metric"])
        v = number(r["value"])
        if m and v is not None:
            data[(m.group(1), r["mode"])].append((int(m.group(2)), v))
    if not data:
        return []
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.5))
    for ax, direction in zip(axes, ("h2d", "d2h")):
        for kind in ("pinned", "pageable", "write-combined", "mapped"):
            pts = sorted(data.get((direction, kind), []))
            if pts:
                ax.plot([b for b, _ in pts], [v for _, v in pts], marker="o", markersize=3, label=kind)
        ax.set_xscale("log", base=2)
        ax.set_xlabel("transfer size (bytes)")
        ax.set_ylabel("GB/s")
        ax.set_title(direction.upper())
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle("host memory kinds: bandwidth vs transfer size (call to completion)")
    fig.tight_layout()
    path = os.path.join(outdir, "memory-kinds.png")
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return [path]


def main(argv):
    if len(argv) != 3:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    rows = read_rows(argv[1])
    os.makedirs(argv[2], exist_ok=True)
    written = plot_grid(rows, argv[2], "latency") + plot_grid(rows, argv[2], "throughput")
    written += plot_memory_kinds(rows, argv[2])
    for path in written:
        print(path)
    if not written:
        print("plot.py: nothing to plot in %s" % argv[1], file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
