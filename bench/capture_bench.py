"""Capture overhead benchmark (issue 3): prints step-time ratios captured / uncaptured.

Regimes (statistics task, torch.set_num_threads(1), OpenBLAS):
  throughput  nn.TransformerEncoderLayer(256, 8, 1024, batch_first) batch 32 seq 128, fwd+bwd+SGD
  per-op      100 x (Linear(16,16) + GELU), batch 4, fwd+bwd+SGD (host overhead per dumped op)
  non-target  the per-op model on steps outside config "step" (capture armed, nothing dumped)
Each ratio is the median captured step time over the median uncaptured one, measured in one run
with the two interleaved. Usage: /usr/bin/python3 bench/capture_bench.py [--quick]
"""
import os
import shutil
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import torch  # noqa: E402

import numprobe  # noqa: E402

torch.set_num_threads(1)
QUICK = "--quick" in sys.argv


def transformer():
    torch.manual_seed(0)
    model = torch.nn.TransformerEncoderLayer(256, 8, 1024, batch_first=True)
    x = torch.randn(32, 128, 256)
    return model, x


def per_op():
    torch.manual_seed(0)
    layers = []
    for _ in range(100):
        layers += [torch.nn.Linear(16, 16), torch.nn.GELU()]
    return torch.nn.Sequential(*layers), torch.randn(4, 16)


def make_step(model, x):
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)

    def step():
        opt.zero_grad()
        loss = model(x).float().pow(2).mean()
        loss.backward()
        opt.step()
    return step


def timed(fn, n):
    out = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return out


def measure(build, level, steps, target_step=True, rounds=3):
    """Median step time uncaptured and captured (interleaved rounds), and entries per step.
    The uncaptured step runs an identical model that never saw the debugger (its hooks would
    otherwise stay registered)."""
    base_model, base_x = build()
    base_step = make_step(base_model, base_x)
    model, x = build()
    step = make_step(model, x)
    for _ in range(3):
        step()
        base_step()
    root = tempfile.mkdtemp(prefix="np_bench_")
    base, cap = [], []
    dbg = numprobe.PrecisionDebugger(dump_path=root, level=level, task="statistics",
                                     step=[0] if not target_step else None)
    if not target_step:
        dbg.set_init_step(1)  # every measured step is past the selected one
    entries_before = 0
    for _ in range(rounds):
        base += timed(base_step, steps)

        def captured():
            dbg.start(model)
            step()
            dbg.stop()
            dbg.step()
        cap += timed(captured, steps)
    stats = dbg.stats()
    dbg.close()
    shutil.rmtree(root, ignore_errors=True)
    per_step = (stats["entries"] - entries_before) / (rounds * steps)
    return statistics.median(base), statistics.median(cap), per_step


def report(name, level, b, c, entries):
    print(f"{name:11s} {level:4s} base {b * 1e3:8.2f} ms  captured {c * 1e3:8.2f} ms  "
          f"ratio {c / b:5.2f}x  entries/step {entries:7.1f}", flush=True)


def main():
    print(f"torch {torch.__version__}, threads {torch.get_num_threads()}, "
          f"{'quick' if QUICK else 'full'} run")
    n_big = 3 if QUICK else 6
    for level in ("L1", "mix", "L0", "L2"):
        b, c, e = measure(transformer, level, n_big, rounds=2 if QUICK else 3)
        report("throughput", level, b, c, e)
    n_small = 10 if QUICK else 40
    for level in ("L1", "mix", "L2"):
        b, c, e = measure(per_op, level, n_small)
        report("per-op", level, b, c, e)
    b, c, e = measure(per_op, "L1", n_small, target_step=False)
    report("non-target", "L1", b, c, e)


if __name__ == "__main__":
    main()
