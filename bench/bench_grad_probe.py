"""grad_probe overhead (issue 35): prints step-time ratios of training with
PrecisionDebugger(task="grad_probe").monitor(model) at every optimizer step over plain training.

Regimes (torch.set_num_threads(1), OPENBLAS_NUM_THREADS=1), fwd+bwd+Adam:
  transformer  nn.TransformerEncoderLayer(256, 8, batch_first) batch 32 seq 128 (16 parameters)
  small-tf     2 x nn.TransformerEncoderLayer(64, 4, dim_feedforward=128) batch 8 seq 32 (32)
  mlp          Linear(64, 256) + GELU + Linear(256, 64), batch 64 (4 parameters, a 0.3 ms step:
               the per-step cost laid bare)
Levels L0, L1 (the goal: <= 1.05x) and L2 with msprobe's default bounds. Each ratio is the median
over rounds of (median recorded step / median plain step) of that round; rounds alternate plain
and recorded models built alike, so slow drifts of the VM cancel. "cpu ratio" is the same for the
process CPU time (the file-writing thread included); "fastest steps" compares each round's fastest
step, which other tenants of a loaded VM disturb least. "on the training thread" is the median time
of the optimizer pre-step hook itself (statistics and direction bits from the gradients, files
queued); "files left at close" is how long close() waited for the writer thread afterwards. Files
go to a temporary directory (no fsync, as numprobe writes them): on a VM whose disk and two cores
are shared, the writer thread's work shows in the ratios.
Usage: python bench/bench_grad_probe.py [--rounds=N] [--steps=N] [--levels=L1] [--only=mlp]
"""
import json
import os
import statistics
import sys
import tempfile
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
sys.path.insert(0, os.environ.get("NUMPROBE_PYTHONPATH") or
                os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import torch  # noqa: E402

from train_timing import option, step, timed  # noqa: E402

import numprobe  # noqa: E402

torch.set_num_threads(1)


def build(regime):
    torch.manual_seed(0)
    if regime == "small-tf":
        layer = torch.nn.TransformerEncoderLayer(64, 4, dim_feedforward=128, batch_first=True)
        model = torch.nn.TransformerEncoder(layer, 2)
        x = torch.randn(8, 32, 64)
    elif regime == "transformer":
        model = torch.nn.TransformerEncoderLayer(256, 8, batch_first=True)
        x = torch.randn(32, 128, 256)
    else:
        model = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.GELU(),
                                    torch.nn.Linear(256, 64))
        x = torch.randn(64, 64)
    return model, torch.optim.Adam(model.parameters(), lr=1e-4), x


def main():
    rounds = int(option("rounds", "7"))
    steps = int(option("steps", "20"))
    levels = option("levels", "L0,L1,L2").split(",")
    regimes = option("only", "mlp,small-tf,transformer").split(",")
    print(f"grad_probe overhead, torch {torch.__version__}, {rounds} rounds x {steps} steps, "
          f"1 thread")
    with tempfile.TemporaryDirectory() as tmp:
        for regime in regimes:
            for level in levels:
                ratios, cpu_ratios, plain_ms, hook_ms, drain_ms, min_ratios = [], [], [], [], [], []
                for r in range(rounds):
                    model, opt, x = build(regime)
                    step(model, opt, x)  # warm-up
                    plain, plain_cpu, plain_min = timed(model, opt, x, steps)
                    model, opt, x = build(regime)
                    cfg = os.path.join(tmp, "config.json")
                    with open(cfg, "w") as f:
                        json.dump({"task": "grad_probe", "dump_path": os.path.join(tmp, f"{regime}_{level}_{r}"),
                                   "grad_probe": {"grad_level": level}}, f)
                    dbg = numprobe.PrecisionDebugger(cfg)
                    dbg.monitor(model)
                    hook_times = []
                    pre_step = dbg._pre_step

                    def timed_pre_step():
                        t = time.perf_counter()
                        pre_step()
                        hook_times.append(time.perf_counter() - t)

                    dbg._pre_step = timed_pre_step
                    step(model, opt, x)
                    rec, rec_cpu, rec_min = timed(model, opt, x, steps)
                    t = time.perf_counter()
                    dbg.close()
                    drain_ms.append((time.perf_counter() - t) * 1e3)
                    hook_ms.append(statistics.median(hook_times) * 1e3)
                    ratios.append(rec / plain)
                    min_ratios.append(rec_min / plain_min)
                    cpu_ratios.append(rec_cpu / plain_cpu)
                    plain_ms.append(plain * 1e3)
                n = sum(p.numel() for p in model.parameters())
                print(f"{regime:12s} {level}: plain step {statistics.median(plain_ms):7.2f} ms "
                      f"({n} gradient elements), ratio {statistics.median(ratios):.3f}x "
                      f"(fastest steps {statistics.median(min_ratios):.3f}x), "
                      f"cpu ratio {statistics.median(cpu_ratios):.3f}x; on the training thread "
                      f"{statistics.median(hook_ms):.3f} ms/step, files left at close "
                      f"{statistics.median(drain_ms):.1f} ms")


if __name__ == "__main__":
    main()
