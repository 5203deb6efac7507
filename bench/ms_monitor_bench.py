"""MindSpore TrainerMon overhead (issue 34 part 4): step-time ratios monitored / unmonitored,
PyNative, CPU. Not a test: it prints numbers.

The model is ms_capture_bench's Transformer encoder (d 256, 4 heads, MLP 1024, 4 layers, batch 8,
seq 64); one step = ms.value_and_grad + nn.Adam. Two copies with the same weights train side by
side, one under numprobe.TrainerMon (every step collected, CSV), the other not; rounds alternate
them so that slow drifts of a shared VM cancel, and each ratio is the median over rounds of
(median monitored step / median unmonitored step), in wall time and in the process's CPU time (all
its threads: less sensitive to other jobs on a shared machine). "in reads" is the time spent in the
optimizer's pre- and post-hooks (after waiting for the queued ops: that wait is not the monitor's), where the monitor reads and summarises every tensor and writes
the step, per step, as a share of the unmonitored step: the monitor's own work, without the
noise of the step itself.
Configs: "optimizer" = wg_distribution + mv_distribution + param_distribution (msprobe's usual
training-health set); "all" = that + xy_distribution on every cell (forward and backward hooks).
Usage: PYTHONPATH=build-mindspore/python .venv/mindspore/bin/python bench/ms_monitor_bench.py
[--configs=optimizer,all] [--rounds=N] [--steps=N]
"""
import json
import os
import shutil
import statistics
import sys
import tempfile
import time

import numpy as np
import mindspore as ms
from mindspore import nn
from mindspore.common.api import _pynative_executor

from ms_capture_bench import BATCH, D, SEQ, Encoder

import numprobe

CONFIGS = {
    "optimizer": dict(wg_distribution=True, mv_distribution=True, param_distribution=True,
                      ops=["min", "max", "norm", "mean"]),
    "all": dict(xy_distribution=True, wg_distribution=True, mv_distribution=True,
                param_distribution=True, ops=["min", "max", "norm", "mean"]),
}


def trainer(weights):
    net = Encoder()
    for p, w in zip(net.trainable_params(), weights):
        p.set_data(ms.Tensor(w))
    net.set_train()
    opt = nn.Adam(net.trainable_params(), learning_rate=1e-4)
    return net, opt, ms.value_and_grad(net, None, opt.parameters)


def main():
    args = dict(a.lstrip("-").split("=", 1) for a in sys.argv[1:] if "=" in a)
    configs = args.get("configs", "optimizer,all").split(",")
    rounds, steps = int(args.get("rounds", 5)), int(args.get("steps", 4))
    ms.set_device("CPU")
    ms.set_seed(0)
    rng = np.random.default_rng(0)
    weights = [(rng.standard_normal(p.shape) * 0.05).astype(np.float32)
               for p in Encoder().trainable_params()]
    x = ms.Tensor(rng.standard_normal((BATCH, SEQ, D)).astype(np.float32))
    y = ms.Tensor(rng.standard_normal((BATCH, SEQ, D)).astype(np.float32))

    def one_step(run):
        """(wall, CPU) seconds of one training step."""
        _, opt, grad_fn = run
        t0, c0 = time.perf_counter(), time.process_time()
        loss, grads = grad_fn(x, y)
        opt(grads)
        loss.asnumpy()
        return time.perf_counter() - t0, time.process_time() - c0

    def medians(run):
        times = [one_step(run) for _ in range(steps)]
        return statistics.median(t for t, _ in times), statistics.median(c for _, c in times)

    print(f"MindSpore {ms.__version__}, CPU, PyNative; encoder d{D} x4, batch {BATCH} seq {SEQ}, "
          f"nn.Adam; {rounds} rounds x {steps} steps; load average "
          f"{' '.join(f'{v:.1f}' for v in os.getloadavg())}")
    base_all = []
    for name in configs:
        out = tempfile.mkdtemp(prefix="ms_monitor_bench_")
        cfg = os.path.join(out, "monitor.json")
        with open(cfg, "w", encoding="utf-8") as f:
            json.dump(CONFIGS[name], f)
        os.environ["MONITOR_OUTPUT_DIR"] = os.path.join(out, "out")
        plain, watched = trainer(weights), trainer(weights)
        mon = numprobe.TrainerMon(cfg)
        spent = [0.0]

        def timed(hook):
            def run(*args):
                # The wait for the step's queued ops is not the monitor's work: waited out first
                # (the monitor's first read would wait for them; the plain step at loss.asnumpy).
                _pynative_executor.sync()  # (ms.runtime.synchronize refuses the CPU)
                t0 = time.perf_counter()
                try:
                    return hook(*args)
                finally:
                    spent[0] += time.perf_counter() - t0
            return run

        # set_monitor registers these attributes: the timed ones count the monitor's reads
        mon._optimizer_pre_hook = timed(mon._optimizer_pre_hook)
        mon._optimizer_post_hook = timed(mon._optimizer_post_hook)
        mon.set_monitor(watched[0], watched[1])
        for _ in range(2):  # warm-up
            one_step(plain)
            one_step(watched)
        ratios, cpu_ratios = [], []
        spent[0] = 0.0
        for _ in range(rounds):
            base, base_cpu = medians(plain)
            monitored, monitored_cpu = medians(watched)
            base_all.append(base)
            ratios.append(monitored / base)
            cpu_ratios.append(monitored_cpu / base_cpu)
        rows = len(mon.collector.last_rows())
        shutil.rmtree(out, ignore_errors=True)
        reads = spent[0] / (rounds * steps)
        print(f"{name:9s} wall {statistics.median(ratios):.3f}x  CPU "
              f"{statistics.median(cpu_ratios):.3f}x  in reads {reads * 1e3:.1f} ms/step = "
              f"{reads / statistics.median(base_all[-rounds:]):.3f} of a step  (wall by round: "
              f"{', '.join(f'{r:.3f}' for r in ratios)}), {rows} rows/step")
    print(f"unmonitored step: median {statistics.median(base_all) * 1e3:.1f} ms; load average "
          f"{' '.join(f'{v:.1f}' for v in os.getloadavg())}")


if __name__ == "__main__":
    main()
