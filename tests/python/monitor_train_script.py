"""A small training run under numprobe.TrainerMon, used by test_monitor.py (and `make demo`).

    python monitor_train_script.py <config.json> <steps> [--world N --port P] [--nan-rank R
        --nan-step S] [--no-monitor] [--kill-after S] [--grad-acc K] [--losses FILE]

Model: embedding-free transformer-ish block (Linear, GELU, LayerNorm, Linear) on random data,
AdamW. With --world, N gloo processes train data-parallel: gradients are all_reduced by hand
(dist.all_reduce) before the optimizer step. --nan-rank/--nan-step multiply the first Linear's
output by NaN on that rank and step (an injected fault). --kill-after S kills the process with
SIGKILL right after step S was written. Output under $MONITOR_OUTPUT_DIR.
"""
import argparse
import json
import os
import signal
import sys

import torch
import torch.distributed as dist

sys.path.insert(0, os.environ.get("NUMPROBE_PYTHONPATH") or
                os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import numprobe  # noqa: E402


class Block(torch.nn.Module):
    def __init__(self, d=16):
        super().__init__()
        self.fc1 = torch.nn.Linear(d, 2 * d)
        self.act = torch.nn.GELU()
        self.norm = torch.nn.LayerNorm(2 * d)
        self.fc2 = torch.nn.Linear(2 * d, 4)
        self.nan_now = False

    def forward(self, x):
        h = self.fc1(x)
        if self.nan_now:
            h = h * float("nan")
        return self.fc2(self.norm(self.act(h)))


def train(rank, args):
    torch.set_num_threads(1)
    if args.world > 1:
        os.environ["MASTER_ADDR"] = "127.0.0.1"
        os.environ["MASTER_PORT"] = str(args.port)
        dist.init_process_group("gloo", rank=rank, world_size=args.world)
    torch.manual_seed(0)
    model = Block()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    mon = None
    if not args.no_monitor:
        mon = numprobe.TrainerMon(args.config)
        mon.set_monitor(model, grad_acc_steps=args.grad_acc, optimizer=opt)
    gen = torch.Generator().manual_seed(100 + rank)
    losses = []
    for step in range(args.steps):
        opt.zero_grad()
        for _ in range(args.grad_acc):
            x = torch.randn(8, 16, generator=gen)
            y = torch.randn(8, 4, generator=gen)
            model.nan_now = rank == args.nan_rank and step == args.nan_step
            loss = torch.nn.functional.mse_loss(model(x), y)
            (loss / args.grad_acc).backward()
            losses.append(loss.item())
        if args.world > 1:
            for p in model.parameters():
                dist.all_reduce(p.grad)
                p.grad /= args.world
        opt.step()
        if args.kill_after is not None and step == args.kill_after:
            os.kill(os.getpid(), signal.SIGKILL)
    if args.losses:
        with open(f"{args.losses}.rank{rank}", "w") as f:
            json.dump([float.hex(v) for v in losses], f)
    if mon is not None:
        with open(os.path.join(os.environ.get("MONITOR_OUTPUT_DIR", "."), f"anomalies_rank{rank}.json"), "w") as f:
            json.dump(mon.anomalies, f)
    if args.world > 1:
        dist.barrier()
        dist.destroy_process_group()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("config")
    ap.add_argument("steps", type=int)
    ap.add_argument("--world", type=int, default=1)
    ap.add_argument("--port", type=int, default=29611)
    ap.add_argument("--nan-rank", type=int, default=-1)
    ap.add_argument("--nan-step", type=int, default=-1)
    ap.add_argument("--no-monitor", action="store_true")
    ap.add_argument("--kill-after", type=int)
    ap.add_argument("--grad-acc", type=int, default=1)
    ap.add_argument("--losses")
    args = ap.parse_args()
    if args.world > 1:
        torch.multiprocessing.spawn(train, args=(args,), nprocs=args.world, join=True)
    else:
        train(0, args)


if __name__ == "__main__":
    main()
