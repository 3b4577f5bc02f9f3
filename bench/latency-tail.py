#!/usr/bin/env python3
"""Where the tail of a capture-to-result run comes from.

    bench/latency-tail.py TRACE.csv[.gz] [--slow-us 8]

TRACE is what `gpupacket-live-latency --trace` writes (each batch's push time
and capture-to-push latency, ns).  For each run in it: the percentiles, the
share of batches slower than the median by 3-20 us, and the phase of the slow
ones (median + --slow-us) within the millisecond and within 4 ms, in bins of
100 / 250 us.  Slow batches piling into one bin of the millisecond are hit by
something periodic at 1 kHz (a timer tick of the host that runs the VM, say),
not by the pipeline's own work; spread evenly, they are not periodic.
"""
import argparse
import csv
import gzip
import sys
from collections import defaultdict


def percentile(sorted_values, pct):
    """Nearest rank, as the element's stats and the bench compute it."""
    n = len(sorted_values)
    rank = min(max(int(pct / 100.0 * n + 0.999999), 1), n)
    return sorted_values[rank - 1]


def phase_bins(times_ns, period_ns, bins):
    counts = [0] * bins
    if times_ns:
        start = min(times_ns)
        for t in times_ns:
            counts[(t - start) % period_ns * bins // period_ns] += 1
    return counts


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("trace")
    p.add_argument("--slow-us", type=float, default=8.0,
                   help="a batch is slow at this much over the run's median (default 8)")
    args = p.parse_args()
    opener = gzip.open if args.trace.endswith(".gz") else open
    runs = defaultdict(list)
    with opener(args.trace, "rt") as f:
        for row in csv.DictReader(f):
            key = (row["source"], row["mode"], row["run"])
            runs[key].append((int(row["push_ns"]), int(row["capture_to_push_ns"]) / 1e3))
    if not runs:
        sys.exit("%s: no batches" % args.trace)
    for (source, mode, run), batches in runs.items():
        lat = sorted(l for _, l in batches)
        p50 = percentile(lat, 50)
        print("%s %s run %s: %d batches, p50 %.1f  p90 %.1f  p99 %.1f  p99.9 %.1f  max %.1f us" % (
            source, mode, run, len(lat), p50, percentile(lat, 90), percentile(lat, 99),
            percentile(lat, 99.9), lat[-1]))
        shares = ["> p50 + %d us: %.2f %%" % (d, 100.0 * sum(1 for l in lat if l > p50 + d) / len(lat))
                  for d in (3, 5, 8, 12, 20)]
        print("  " + ";  ".join(shares))
        slow = [t for t, l in batches if l > p50 + args.slow_us]
        print("  slow (> p50 + %g us): %d; their phase in 1 ms, 100-us bins: %s" % (
            args.slow_us, len(slow), phase_bins(slow, 1000000, 10)))
        print("  ... and in 4 ms, 250-us bins: %s" % phase_bins(slow, 4000000, 16))
        every = [t for t, _ in batches]
        print("  (every batch, 1 ms, 100-us bins: %s)" % phase_bins(every, 1000000, 10))


if __name__ == "__main__":
    main()
