"""`numprobe graph` beside msprobe's own graph build on the ResNet-50 fixture pair (the pair msprobe's
golden .vis.db was built from), whole processes, best of N runs each.

msprobe is the mindstudio-probe of the torch 2.x lane (.venv/torch2, scripts/setup_venv.sh torch2);
without it only numprobe's time is printed. Usage: graph_vs_msprobe.py [runs]
"""
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
FX = ROOT.parent / "shared" / "fixtures" / "msprobe" / "quick_start_resnet50_gpu_mix_statistics"
CLI = pathlib.Path(os.environ.get("NUMPROBE_CLI", ROOT / "build" / "bin" / "numprobe"))
MSPROBE = ROOT / ".venv" / "torch2" / "bin" / "msprobe"


def best_of(runs, argv, out):
    best = None
    for _ in range(runs):
        shutil.rmtree(out, ignore_errors=True)
        t0 = time.perf_counter()
        p = subprocess.run(argv, capture_output=True, text=True)
        dt = time.perf_counter() - t0
        if p.returncode != 0:
            sys.exit(f"{argv[0]} failed:\n{p.stdout[-2000:]}{p.stderr[-2000:]}")
        best = dt if best is None else min(best, dt)
    return best


def main():
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    tmp = pathlib.Path(tempfile.mkdtemp(prefix="numprobe-graph-bench-"))
    try:
        t, g = FX / "step0" / "proc2016", FX / "step1" / "proc2016"
        ours = best_of(runs, [str(CLI), "graph", "-t", str(t), "-g", str(g), "-o", str(tmp / "np" / "g.vis.db")],
                       tmp / "np")
        print(f"ResNet-50 pair, whole process, best of {runs}: numprobe graph {ours:.3f} s")
        if MSPROBE.exists():
            theirs = best_of(max(1, runs // 2), [str(MSPROBE), "graph_visualize", "-tp", str(t), "-gp", str(g),
                                                 "-o", str(tmp / "ms")], tmp / "ms")
            print(f"  msprobe graph_visualize (mindstudio-probe in .venv/torch2) {theirs:.3f} s "
                  f"= {theirs / ours:.0f}x numprobe's time")
        else:
            print(f"  msprobe not installed at {MSPROBE}: scripts/setup_venv.sh torch2")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
