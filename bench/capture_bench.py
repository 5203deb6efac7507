"""Capture overhead benchmark (issue 3): prints step-time ratios captured / uncaptured.

Regimes (statistics task, torch.set_num_threads(1) and OPENBLAS_NUM_THREADS=1, OpenBLAS):
  throughput  nn.TransformerEncoderLayer(256, 8, 1024, batch_first) batch 32 seq 128, fwd+bwd+SGD
  per-op      100 x (Linear(16,16) + GELU), batch 4, fwd+bwd+SGD (host overhead per dumped op)
  non-target  the per-op model on steps outside config "step" (capture armed, nothing dumped)
Each ratio is the median over rounds of (median captured step / median uncaptured step) of that
round: rounds alternate the two, so slow drifts of this VM cancel. "cpu ratio" is the median over
rounds of the process CPU time (every thread: training, statistics workers, writer) of a round's
captured steps, the writer flushed, over that of its uncaptured steps: the work capture adds,
which CPU steal and other tenants of a VM disturb far less than wall time. "thread ratio" is the
same for the training thread's own CPU time (time.thread_time()): what capture costs the thread
that trains, the writer excluded. A captured step is start(model) + step + stop() + step(): the
step's files are assembled by the writer thread meanwhile ("writer queue max" shows whether it keeps
up: it blocks training only at 65,536 queued entries; "stats MB/step" is what the statistics
passes read per captured step, "cached" the share of tensor leaves served by the per-version cache).
Usage: /usr/bin/python3 bench/capture_bench.py [--quick] [--only=throughput,per-op,non-target]
[--levels=L1,mix,L0,L2] [--rounds=N] [--steps=N] [--device=cuda] [--task=tensor] [--async]
(--async: config async_dump, which on CUDA enqueues the copies of saved tensors; rounds, and steps per round and
side, for every regime: more and shorter rounds cancel this VM's drift better; on CUDA a step
ends with torch.cuda.synchronize(), so captured steps pay for any host-device waits they add)
"""
import json
import os
import shutil
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
# One thread for real: torch.set_num_threads does not reach OpenBLAS's own pool, which otherwise
# runs the uncaptured matmuls on both cores and competes with the capture's worker threads.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
import torch  # noqa: E402

import numprobe  # noqa: E402

torch.set_num_threads(1)
QUICK = "--quick" in sys.argv


def _option(name, default):
    for a in sys.argv[1:]:
        if a.startswith(f"--{name}="):
            return a.split("=", 1)[1].split(",")
    return default


ONLY = _option("only", ["throughput", "per-op", "non-target"])
LEVELS = _option("levels", ["L1", "mix", "L0", "L2"])
ROUNDS = _option("rounds", None)
STEPS = _option("steps", None)
DEVICE = torch.device(_option("device", ["cpu"])[0])
TASK = _option("task", ["statistics"])[0]
ASYNC = "--async" in sys.argv


def transformer():
    torch.manual_seed(0)
    model = torch.nn.TransformerEncoderLayer(256, 8, 1024, batch_first=True)
    x = torch.randn(32, 128, 256)
    return model.to(DEVICE), x.to(DEVICE)


def per_op():
    torch.manual_seed(0)
    layers = []
    for _ in range(100):
        layers += [torch.nn.Linear(16, 16), torch.nn.GELU()]
    return torch.nn.Sequential(*layers).to(DEVICE), torch.randn(4, 16, device=DEVICE)


def make_step(model, x):
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)

    def step():
        opt.zero_grad()
        loss = model(x).float().pow(2).mean()
        loss.backward()
        opt.step()
        if DEVICE.type == "cuda":
            torch.cuda.synchronize()
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
    rounds = int(ROUNDS[0]) if ROUNDS else rounds
    steps = int(STEPS[0]) if STEPS else steps
    base_model, base_x = build()
    base_step = make_step(base_model, base_x)
    model, x = build()
    step = make_step(model, x)
    for _ in range(3):
        step()
        base_step()
    root = tempfile.mkdtemp(prefix="np_bench_")
    base, cap = [], []
    cfg = os.path.join(root, "config.json")
    with open(cfg, "w") as f:
        json.dump({"task": TASK, "async_dump": ASYNC}, f)
    dbg = numprobe.PrecisionDebugger(config_path=cfg, dump_path=root, level=level,
                                     step=[0] if not target_step else None)
    if not target_step:
        dbg.set_init_step(1)  # every measured step is past the selected one
    ratios, cpu_ratios, thread_ratios = [], [], []
    before = dbg.stats()

    def captured():
        dbg.start(model)
        step()
        dbg.stop()
        dbg.step()
    for _ in range(rounds):
        c0, t0 = time.process_time(), time.thread_time()
        b = timed(base_step, steps)
        c1, t1 = time.process_time(), time.thread_time()
        c = timed(captured, steps)
        t2 = time.thread_time()
        dbg.flush()  # the writer's work on these steps is counted in this round's CPU time
        c2 = time.process_time()
        base += b
        cap += c
        ratios.append(statistics.median(c) / statistics.median(b))
        cpu_ratios.append((c2 - c1) / max(c1 - c0, 1e-9))
        thread_ratios.append((t2 - t1) / max(t1 - t0, 1e-9))
    dbg.flush()  # the writer assembles steps in the background; count what it wrote
    stats = dbg.stats()
    dbg.close()
    shutil.rmtree(root, ignore_errors=True)
    n = rounds * steps
    per_step = stats["entries"] / n
    computed = stats.get("stats_computed", 0) - before.get("stats_computed", 0)
    cached = stats.get("stats_cached", 0) - before.get("stats_cached", 0)
    mb = (stats.get("stats_bytes", 0) - before.get("stats_bytes", 0)) / n / 1e6
    share = cached / (computed + cached) if computed + cached else 0.0
    return (statistics.median(base), statistics.median(cap), statistics.median(ratios),
            statistics.median(cpu_ratios), statistics.median(thread_ratios), per_step,
            stats["queue_high_water"], mb, share)


def report(name, level, b, c, ratio, cpu_ratio, thread_ratio, entries, queue, mb, share):
    print(f"{name:11s} {level:4s} base {b * 1e3:8.2f} ms  captured {c * 1e3:8.2f} ms  "
          f"ratio {ratio:5.2f}x  cpu ratio {cpu_ratio:5.2f}x  thread ratio {thread_ratio:5.2f}x  "
          f"entries/step {entries:7.1f}  "
          f"writer queue max {queue}  stats MB/step {mb:6.1f}  cached {share * 100:3.0f}%",
          flush=True)


def main():
    print(f"torch {torch.__version__}, device {DEVICE}, threads {torch.get_num_threads()}, "
          f"task {TASK}{' async_dump' if ASYNC else ''}, {'quick' if QUICK else 'full'} run")
    n_big = 3 if QUICK else 4
    if "throughput" in ONLY:
        for level in [lv for lv in ("L1", "mix", "L0", "L2") if lv in LEVELS]:
            report("throughput", level, *measure(transformer, level, n_big,
                                                 rounds=2 if QUICK else 5))
    n_small = 10 if QUICK else 40
    if "per-op" in ONLY:
        for level in [lv for lv in ("L1", "mix", "L2") if lv in LEVELS]:
            report("per-op", level, *measure(per_op, level, n_small))
    if "non-target" in ONLY:
        report("non-target", "L1", *measure(per_op, "L1", n_small, target_step=False))


if __name__ == "__main__":
    main()
