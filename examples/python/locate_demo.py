"""A small GPT trained for one step under numprobe.PrecisionDebugger, with an optional injected
fault: the training script `numprobe locate` drives (docs/locate.md). It sets its own dump config
(statistics at level mix into --dump); locate replaces it through NUMPROBE_CONFIG without an edit.

    PYTHONPATH=python /usr/bin/python3 examples/python/locate_demo.py [--fault F] [--ranks 2]

Faults (all in the model's code path, nothing else differs between two runs):
  ln_eps        block 1's second LayerNorm built with eps 1e-2 instead of 1e-5 (an argument)
  fc1_weight    one row of block 1's fc1 weight x(1 + 1e-3) (a checkpoint-loading bug)
  gelu_kernel   F.gelu computes the tanh approximation while called as the exact one (a kernel bug)
--ranks N runs N processes (torch.multiprocessing, forked, gloo on 127.0.0.1) that average their
gradients with all_reduce; --fault-rank R puts the fault on rank R only. --unseeded makes a run
that does not reproduce itself (weights seeded from the process id).
"""
import argparse
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import numprobe  # noqa: E402
import tiny_models  # noqa: E402

FAULTS = ("", "ln_eps", "fc1_weight", "gelu_kernel", "extra_scale")
_gelu = F.gelu


def gelu_tanh_inside(input, approximate="none"):
    return _gelu(input, approximate="tanh")


def build(fault, unseeded=False):
    # unseeded: weights from this process's id (a run that cannot reproduce itself)
    model = tiny_models.make_gpt(seed=os.getpid() if unseeded else 0)
    if fault == "ln_eps":
        model.blocks[1].ln2.eps = 1e-2
    if fault == "fc1_weight":
        with torch.no_grad():
            model.blocks[1].fc1.weight[3] *= 1 + 1e-3
    if fault == "extra_scale":  # an op only the target calls, inside block 1's fc1
        model.blocks[1].fc1.register_forward_hook(lambda mod, args, out: out.exp().log())
    return model


def train(fault, dump, steps, rank=None, world=1, unseeded=False):
    torch.set_num_threads(1)
    model = build(fault, unseeded)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    dbg = numprobe.PrecisionDebugger(dump_path=dump, level="mix", task="statistics")
    if fault == "gelu_kernel":
        F.gelu = gelu_tanh_inside
        dbg.register_custom_api(F, "gelu", "Functional")  # recorded under msprobe's name
    try:
        for step in range(steps):
            idx, target = tiny_models.gpt_batch(seed=step + (rank or 0))
            dbg.start(model)
            logits = model(idx)
            loss = F.cross_entropy(logits.view(-1, logits.shape[-1]), target.view(-1))
            loss.backward()
            if world > 1:
                for p in model.parameters():
                    torch.distributed.all_reduce(p.grad)
                    p.grad /= world
            dbg.stop()
            opt.step()
            opt.zero_grad()
            dbg.step()
            print(f"rank {rank if rank is not None else '-'} step {step}: loss {loss.item():.6f}")
    finally:
        dbg.close()
        F.gelu = _gelu


def worker(rank, args):
    import torch.distributed as dist
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(args.port)
    dist.init_process_group("gloo", rank=rank, world_size=args.ranks)
    fault = args.fault if args.fault_rank in (None, rank) else ""
    train(fault, args.dump, args.steps, rank, args.ranks)
    dist.barrier()
    dist.destroy_process_group()


def main(default_fault=""):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--fault", default=default_fault, choices=FAULTS)
    ap.add_argument("--dump", default="locate_demo_dump")
    ap.add_argument("--steps", type=int, default=1)
    ap.add_argument("--ranks", type=int, default=1)
    ap.add_argument("--fault-rank", type=int, default=None)
    ap.add_argument("--port", type=int, default=29517)
    ap.add_argument("--unseeded", action="store_true", help="initial weights from the process id")
    args = ap.parse_args()
    if args.ranks == 1:
        train(args.fault, args.dump, args.steps, unseeded=args.unseeded)
        return
    import torch.multiprocessing as mp
    # fork: the ranks start without importing torch again (CPU and gloo only)
    mp.start_processes(worker, args=(args,), nprocs=args.ranks, join=True, start_method="fork")


if __name__ == "__main__":
    main()
