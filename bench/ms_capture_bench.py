"""MindSpore capture overhead (issue 32): step-time ratios captured / uncaptured, PyNative, CPU.

A Transformer encoder (d 256, 4 heads, MLP 1024, 4 layers, batch 8, seq 64), one training step =
ms.value_and_grad + SGD; captured = start(net) + step + stop() + step(), statistics task. Rounds
alternate uncaptured and captured steps so that slow drifts of a shared VM cancel; each ratio is the
median over rounds of (median captured step / median uncaptured step). msprobe 26.2 is not run: its
MindSpore dump fails on the CPU (its statistics call `mint` norm, which has no CPU kernel).
Usage: PYTHONPATH=build-mindspore/python .venv/mindspore/bin/python bench/ms_capture_bench.py
[--levels=L0,L1,mix] [--rounds=N] [--steps=N] [--data_mode=all|forward|...]

Where the time goes (docs/capture.md, "Overhead"): each recorded tensor is read with asnumpy(),
which waits until MindSpore's asynchronous PyNative pipeline has computed it, and with backward
entries (data_mode all, the default) each recorded call also runs MindSpore's CellBackwardHook op,
which waits the same way. data_mode=forward measures capture without the hook op.
"""
import json
import math
import os
import shutil
import statistics
import sys
import tempfile
import time

import numpy as np
import mindspore as ms
from mindspore import nn, ops

import numprobe

D, HEADS, FF, LAYERS, BATCH, SEQ = 256, 4, 1024, 4, 8, 64


class EncoderLayer(nn.Cell):
    def __init__(self):
        super().__init__()
        self.qkv = nn.Dense(D, 3 * D)
        self.proj = nn.Dense(D, D)
        self.norm1 = nn.LayerNorm((D,))
        self.norm2 = nn.LayerNorm((D,))
        self.up = nn.Dense(D, FF)
        self.down = nn.Dense(FF, D)

    def construct(self, x):
        b, s, _ = x.shape
        q, k, v = ops.split(self.qkv(self.norm1(x)), D, axis=-1)
        heads = [t.reshape(b, s, HEADS, D // HEADS).swapaxes(1, 2) for t in (q, k, v)]
        scores = ops.matmul(heads[0], heads[1].swapaxes(-1, -2)) / math.sqrt(D // HEADS)
        att = ops.matmul(ops.softmax(scores, axis=-1), heads[2]).swapaxes(1, 2).reshape(b, s, D)
        x = x + self.proj(att)
        return x + self.down(ops.gelu(self.up(self.norm2(x))))


class Encoder(nn.Cell):
    def __init__(self):
        super().__init__()
        self.layers = nn.CellList([EncoderLayer() for _ in range(LAYERS)])
        self.out = nn.Dense(D, D)

    def construct(self, x, y):
        for layer in self.layers:
            x = layer(x)
        return ops.mse_loss(self.out(x), y)


def main():
    args = dict(a.lstrip("-").split("=", 1) for a in sys.argv[1:] if "=" in a)
    levels = args.get("levels", "L0,L1,mix").split(",")
    rounds, steps = int(args.get("rounds", 5)), int(args.get("steps", 4))
    data_mode = args.get("data_mode", "all").split(",")
    ms.set_device("CPU")
    ms.set_seed(0)
    net = Encoder()
    rng = np.random.default_rng(0)
    x = ms.Tensor(rng.standard_normal((BATCH, SEQ, D)).astype(np.float32))
    y = ms.Tensor(rng.standard_normal((BATCH, SEQ, D)).astype(np.float32))
    grad_fn = ms.value_and_grad(net, None, net.trainable_params())
    opt = nn.SGD(net.trainable_params(), learning_rate=1e-3)

    def one_step(dbg):
        t0 = time.perf_counter()
        if dbg is not None:
            dbg.start(net)
        loss, grads = grad_fn(x, y)
        if dbg is not None:
            dbg.stop()
        opt(grads)
        loss.asnumpy()
        if dbg is not None:
            dbg.step()
        return time.perf_counter() - t0

    for _ in range(2):  # warm-up
        one_step(None)
    print(f"MindSpore {ms.__version__}, CPU, PyNative; encoder d{D} x{LAYERS}, batch {BATCH} seq {SEQ}; "
          f"{rounds} rounds x {steps} steps; data_mode {','.join(data_mode)}")
    base_all = []
    for level in levels:
        out = tempfile.mkdtemp(prefix="ms_bench_")
        cfg = os.path.join(out, "config.json")
        with open(cfg, "w") as f:
            json.dump({"task": "statistics", "dump_path": out, "level": level,
                       "statistics": {"data_mode": data_mode}}, f)
        dbg = numprobe.PrecisionDebugger(config_path=cfg, model=net)
        ratios = []
        for _ in range(rounds):
            base = statistics.median(one_step(None) for _ in range(steps))
            cap = statistics.median(one_step(dbg) for _ in range(steps))
            base_all.append(base)
            ratios.append(cap / base)
        dbg.flush()
        entries = dbg.stats()["entries"] // (rounds * steps)
        dbg.close()
        shutil.rmtree(out, ignore_errors=True)
        print(f"{level:4s} ratio {statistics.median(ratios):.2f}x  (rounds: "
              f"{', '.join(f'{r:.2f}' for r in ratios)}), {entries} entries/step")
    print(f"uncaptured step: median {statistics.median(base_all) * 1e3:.1f} ms; load average "
          f"{' '.join(f'{v:.2f}' for v in os.getloadavg())}")


if __name__ == "__main__":
    main()
