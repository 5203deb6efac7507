"""4-process gloo run captured at level mix: python dist_capture_script.py <dump_path> <port>."""
import os
import sys

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

# The package of the build under test (conftest.py's NUMPROBE_PYTHONPATH), else the source tree's.
sys.path.insert(0, os.environ.get("NUMPROBE_PYTHONPATH") or
                os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import numprobe  # noqa: E402

WORLD = 4


def worker(rank, dump_path, port):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = port
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=WORLD)
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x = torch.randn(4, 8) + rank  # each rank its own data
    dbg = numprobe.PrecisionDebugger(dump_path=dump_path, level="mix")
    for _ in range(2):
        dbg.start(model)
        model(x).pow(2).mean().backward()
        for p in model.parameters():
            dist.all_reduce(p.grad)
            p.grad /= WORLD
        evens = dist.new_group([0, 2])  # collective: every rank creates it
        if rank in (0, 2):
            dist.broadcast(p.grad, src=0, group=evens)
        opt.step()
        opt.zero_grad()
        dbg.stop()
        dbg.step()
    dbg.close()
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    mp.spawn(worker, args=(sys.argv[1], sys.argv[2]), nprocs=WORLD, join=True)
