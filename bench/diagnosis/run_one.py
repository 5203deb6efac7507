"""One capture of the suite: builds a model with the seed, optionally injects one fault, trains
`steps` SGD steps under numprobe's PrecisionDebugger (level mix) and writes the dump.

usage: run_one.py --model gpt --fault gelu_tanh --mode statistics --out DIR [--steps 2]
                  [--threads N] [--bf16 | --fp16] [--tf32] [--deterministic] [--dump_step N]
Noise knobs: --threads (reduction order), --bf16 / --fp16 (autocast on the forward), --deterministic
(torch.use_deterministic_algorithms), --tf32 (matmul,
linear and convolution inputs rounded to TF32's 10-bit mantissa inside the op: the dump sees
the op's true inputs and an output computed from rounded ones, as on a GPU with TF32 on).
--dump_step N dumps only step N (msprobe's `step` list). The BLAS build and the CPU generation
(ATEN_CPU_CAPABILITY, ONEDNN_MAX_CPU_ISA, OPENBLAS_CORETYPE) are chosen by the caller's environment. Each run is its own process so that
these settings cannot leak between the two sides of a pair.
"""
import argparse
import json
import os
import sys

import torch
import torch.nn.functional as F
from torch.overrides import TorchFunctionMode

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import models  # noqa: E402
import numprobe  # noqa: E402  (PYTHONPATH=<repo>/python or an installed package)


def tf32_round(t):
    """t with its fp32 mantissa rounded to 10 bits (nearest), gradient passed straight through."""
    if not isinstance(t, torch.Tensor) or t.dtype != torch.float32:
        return t
    r = t.detach().view(torch.int32).add(0x1000).bitwise_and(-0x2000).view(torch.float32)
    return t + (r - t.detach())


class Tf32Inside(TorchFunctionMode):
    """Pushed below the dumper's own mode: the dumper records the op's arguments as given, then
    this mode computes the op from TF32-rounded copies. Code run here is not captured."""

    CONTRACTIONS = {F.linear, torch.matmul, torch.Tensor.matmul, torch.Tensor.__matmul__,
                    torch.bmm, F.conv2d}

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func in self.CONTRACTIONS:
            args = tuple(tf32_round(a) for a in args)
            kwargs = {k: tf32_round(v) for k, v in kwargs.items()}
        return func(*args, **kwargs)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True, choices=sorted(models.MODELS))
    ap.add_argument("--fault", default="")
    ap.add_argument("--mode", default="statistics", choices=["statistics", "md5", "tensor"])
    ap.add_argument("--out", required=True)
    ap.add_argument("--steps", type=int, default=1)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--bf16", action="store_true")
    ap.add_argument("--fp16", action="store_true", help="float16 autocast (CPU: torch >= 2.x)")
    ap.add_argument("--tf32", action="store_true")
    ap.add_argument("--deterministic", action="store_true")
    ap.add_argument("--dump_step", type=int, default=-1,
                    help="dump only this step (msprobe's config `step`: [N]); default every step")
    a = ap.parse_args()

    torch.set_num_threads(a.threads)
    if a.deterministic:
        torch.use_deterministic_algorithms(True)
    fault = models.Fault(a.fault)
    make, batch, loss_of, tamper, grad_fault = models.MODELS[a.model]
    torch.manual_seed(1234)
    model = make(fault)
    tamper(model, fault)
    opt = models.make_optimizer(model, fault)
    data = batch(fault)

    cfg = {"task": "tensor" if a.mode == "tensor" else "statistics", "level": "mix",
           "dump_path": a.out, "statistics": {"summary_mode": "md5" if a.mode == "md5" else "statistics"}}
    if a.dump_step >= 0:
        cfg["step"] = [a.dump_step]  # held4: a later step only, after the runs drifted
    os.makedirs(a.out, exist_ok=True)
    cfg_path = os.path.join(a.out, "config.json")
    with open(cfg_path, "w") as f:
        json.dump(cfg, f)
    tf32 = Tf32Inside() if a.tf32 else None
    if tf32:
        tf32.__enter__()  # before the dumper's mode, so below it
    dbg = numprobe.PrecisionDebugger(config_path=cfg_path)
    losses = []
    for _ in range(a.steps):
        opt.zero_grad()
        dbg.start(model)
        with torch.autocast("cpu", dtype=torch.float16 if a.fp16 else torch.bfloat16,
                            enabled=a.bf16 or a.fp16):
            loss = loss_of(model, data, fault)
        loss.backward()
        losses.append(float(loss))
        dbg.stop()
        grad_fault(model, fault)
        opt.step()
        dbg.step()
    dbg.close()
    if tf32:
        tf32.__exit__(None, None, None)
    print("losses", " ".join(f"{v:.9g}" for v in losses))


if __name__ == "__main__":
    main()
