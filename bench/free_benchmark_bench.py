"""free_benchmark overhead (issue 35): prints a training step's time with task free_benchmark
against the same step uncaptured.

Model: nn.TransformerEncoderLayer(128, 4, 512, batch_first, dropout 0.1) on a batch of 8 x 64,
forward + backward + SGD, on the CPU (torch.set_num_threads(1)), in fp32 (pert_mode add_noise:
improve_precision leaves fp32 inputs alone, so nothing would be re-run) and in bf16
(improve_precision). Each configuration runs max_sample 1 and 20 (perturbed calls per API and
step); a step is start() + step + stop() + step() with handler_type check at level L1.
Rounds alternate uncaptured and captured steps, so slow drifts of this VM cancel; "ratio" is the
median over rounds of median captured step / median uncaptured step. "re-runs/step" is how many
API calls were perturbed and re-run per step.
Usage: /usr/bin/python3 bench/free_benchmark_bench.py [--rounds=N] [--steps=N]
(numprobe from python/ after `make build`; the torch 2.x lane: NUMPROBE_PYTHONPATH=build-torch2/python
.venv/torch2/bin/python bench/free_benchmark_bench.py)
"""
import json
import os
import statistics
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# capture_bench: one thread for real (OpenBLAS too), numprobe from NUMPROBE_PYTHONPATH or python/,
# its step timer and its --rounds/--steps options
import capture_bench as cb  # noqa: E402
import torch  # noqa: E402

import numprobe  # noqa: E402


def build(dtype):
    torch.manual_seed(0)
    model = torch.nn.TransformerEncoderLayer(128, 4, 512, dropout=0.1, batch_first=True).to(dtype)
    x = torch.randn(8, 64, 128).to(dtype)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)

    def step():
        opt.zero_grad()
        model(x).float().pow(2).mean().backward()
        opt.step()

    return step


def timed(fn, n):
    return statistics.median(cb.timed(fn, n))


def measure(dtype, mode, max_sample, rounds, steps, root):
    plain = build(dtype)
    work = build(dtype)
    cfg = os.path.join(root, f"{mode}_{max_sample}.json")
    with open(cfg, "w") as f:
        json.dump({"task": "free_benchmark", "dump_path": os.path.join(root, "out"), "level": "L1",
                   "free_benchmark": {"pert_mode": mode, "max_sample": max_sample}}, f)
    dbg = numprobe.PrecisionDebugger(config_path=cfg)
    fb = dbg.free_benchmark

    def captured():
        dbg.start()
        work()
        dbg.stop()
        dbg.step()

    plain()
    captured()  # warm-up
    before = fb.calls_perturbed
    ratios, base, cap = [], [], []
    for _ in range(rounds):
        b = timed(plain, steps)
        c = timed(captured, steps)
        base.append(b)
        cap.append(c)
        ratios.append(c / b)
    reruns = (fb.calls_perturbed - before) / (rounds * steps)
    dbg.close()
    return statistics.median(base), statistics.median(cap), statistics.median(ratios), reruns


def main():
    rounds = int(cb.ROUNDS[0]) if cb.ROUNDS else 5
    steps = int(cb.STEPS[0]) if cb.STEPS else 4
    print(f"torch {torch.__version__}, TransformerEncoderLayer(128, 4, 512), batch 8 x 64, "
          f"fwd+bwd+SGD, 1 thread, {rounds} rounds x {steps} steps")
    print(f"{'dtype':<9} {'pert_mode':<18} {'max_sample':>10} {'plain ms':>9} {'captured ms':>12} "
          f"{'ratio':>7} {'re-runs/step':>13}")
    with tempfile.TemporaryDirectory() as root:
        for dtype, mode in ((torch.float32, "add_noise"), (torch.bfloat16, "improve_precision")):
            for max_sample in (1, 20):
                b, c, r, n = measure(dtype, mode, max_sample, rounds, steps, root)
                print(f"{str(dtype).replace('torch.', ''):<9} {mode:<18} {max_sample:>10} "
                      f"{b * 1e3:>9.2f} {c * 1e3:>12.2f} {r:>6.2f}x {n:>13.1f}")


if __name__ == "__main__":
    main()
