#!/usr/bin/env python3
"""Sharded compare on this machine (docs/scale.md): rows/s of a 64-rank statistics pair compared as
1 and 2 shards (separate processes, as a launcher starts them), the merge time of 64 and of 1,024
real shard summaries, and the projected time of a 1,000-rank x 1M-rows-a-rank pair on 100 nodes
like this one (rows / (nodes x rows/s of a node) + the merge of 1,000 summaries).

Usage: bench/bench_shard.py [--bin build/bin/numprobe] [--layers 1500] [--keep DIR]
Prints numbers; asserts nothing about them."""
import argparse
import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "python"))
from sharded_dumps import write_pair  # noqa: E402


def run_shards(bin_, target, golden, out, count, parallel):
    """Runs shards 1..count of a compare; `parallel` at a time. Returns the wall time."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("SLURM_", "OMPI_", "PMI_")) and k not in ("RANK", "WORLD_SIZE")}
    t0 = time.perf_counter()
    pending = list(range(1, count + 1))
    running = []
    while pending or running:
        while pending and len(running) < parallel:
            k = pending.pop(0)
            running.append(subprocess.Popen(
                [bin_, "compare", "-t", target, "-g", golden, "-o", out, "--shard", f"{k}/{count}"],
                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env))
        p = running.pop(0)
        if p.wait() != 0:
            sys.exit(f"shard failed: {p.stderr.read().decode()}")
    return time.perf_counter() - t0


def timed(cmd):
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t0


def rows_of(summary):
    return sum(p["rows"] for p in json.loads(summary.read_text())["pairs"])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=str(ROOT / "build" / "bin" / "numprobe"))
    ap.add_argument("--layers", type=int, default=1500, help="3 entries (6 rows) a layer, per rank")
    ap.add_argument("--keep", help="work directory to keep (default: a temporary one, removed)")
    a = ap.parse_args()
    work = pathlib.Path(a.keep or tempfile.mkdtemp(prefix="numprobe-bench-shard-"))
    try:
        t0 = time.perf_counter()
        target, golden = write_pair(work / "pair64", ranks=64, steps=1, layers=a.layers,
                                    fault_rank=37, fault_layer=a.layers // 2)
        size = sum(f.stat().st_size for f in (work / "pair64").rglob("dump.json"))
        print(f"generated 64-rank pair: {size / 1e6:.0f} MB of dump.json in {time.perf_counter() - t0:.1f} s")
        # Warm the page cache, then one process, then two shards at once (one per core).
        run_shards(a.bin, str(target), str(golden), str(work / "warm"), 1, 1)
        whole = work / "one"
        t1 = timed([a.bin, "compare", "-t", str(target), "-g", str(golden), "-o", str(whole)])
        rows = rows_of(whole / "summary.json")
        print(f"1 process (2 threads): {rows:,} rows in {t1:.2f} s = {rows / t1 / 1e6:.2f} M rows/s")
        t_s1 = run_shards(a.bin, str(target), str(golden), str(work / "s1"), 1, 1)
        print(f"1 shard  (--shard 1/1): {t_s1:.2f} s = {rows / t_s1 / 1e6:.2f} M rows/s")
        t_s2 = run_shards(a.bin, str(target), str(golden), str(work / "s2"), 2, 2)
        print(f"2 shards (2 processes at once): {t_s2:.2f} s = {rows / t_s2 / 1e6:.2f} M rows/s")
        t_m2 = timed([a.bin, "merge", str(work / "s2"), "-o", str(work / "s2")])
        same = (work / "s2" / "summary.json").read_bytes() == (whole / "summary.json").read_bytes()
        print(f"merge of 2 summaries: {t_m2 * 1e3:.0f} ms; merged == unsharded: {same}")

        # 64 shards, one rank each: the merge reads 64 summaries.
        t_s64 = run_shards(a.bin, str(target), str(golden), str(work / "s64"), 64, 2)
        t_m64 = timed([a.bin, "merge", str(work / "s64"), "-o", str(work / "s64")])
        same = (work / "s64" / "summary.json").read_bytes() == (whole / "summary.json").read_bytes()
        print(f"64 shards (2 at a time): {t_s64:.2f} s; merge of 64 summaries: {t_m64 * 1e3:.0f} ms; "
              f"merged == unsharded: {same}")

        # 1,024 ranks, one shard each (small ranks: the merge cost is per summary, not per row).
        shutil.rmtree(work / "pair64")
        t2, g2 = write_pair(work / "pair1024", ranks=1024, steps=1, layers=8, fault_rank=700,
                            fault_layer=3, factor=100.0)
        t_s1024 = run_shards(a.bin, str(t2), str(g2), str(work / "s1024"), 1024, 2)
        t_m1024 = timed([a.bin, "merge", str(work / "s1024"), "-o", str(work / "s1024")])
        merged = json.loads((work / "s1024" / "summary.json").read_text())
        origin = merged["origins"][0]
        print(f"1,024 shards (2 at a time): {t_s1024:.1f} s; merge of 1,024 summaries: "
              f"{t_m1024 * 1e3:.0f} ms (origin rank {origin['rank']}, received by "
              f"{len(origin['received_by'])} ranks)")

        # The projection: 1,000 ranks x 1M rows on 100 nodes of this machine's 2 cores.
        node_rate = rows / t_s2
        total_rows = 1000 * 1_000_000
        compare_s = total_rows / (100 * node_rate)
        merge_s = t_m1024 * 1000 / 1024
        print(f"projected 1,000 ranks x 1M rows on 100 such nodes: {compare_s:.0f} s compare "
              f"({total_rows / 100 / 1e6:.0f} M rows a node at {node_rate / 1e6:.2f} M rows/s) + "
              f"{merge_s:.2f} s merge = {compare_s + merge_s:.0f} s")
    finally:
        if not a.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
