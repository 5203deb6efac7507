"""Runs msprobe's own free_benchmark and grad_probe, in msprobe 8.3.3's venv (.venv/msprobe_legacy,
tests/requirements/msprobe_legacy.txt), for the live tests in test_free_benchmark.py and
test_grad_probe.py; tests/python/msprobe_legacy.py starts it. It imports torch, numpy and msprobe
only (never numprobe): the tests hand it the weights, inputs or gradients as .npz files.

  free-benchmark CONFIG STATE.npz STEPS [checked|unchecked]
                                          msprobe's PrecisionDebugger over fragile_model.Fragile
                                          (the weights and inputs in STATE; the optimizer's step
                                          inside start()/stop() or not); prints the CSVs' paths
  grad-monitor DUMP GRADS.npz LEVEL BOUNDS_JSON
                                          msprobe's GradientMonitor sees the gradients in GRADS
                                          (keys "{step}/{param}") at each optimizer step
  grad-compare RUN1 RUN2 OUT              msprobe's GradComparator.compare_distributed

What msprobe 8.3.3 needs to run on the CPU, all set up here and none of it a change to msprobe:
- free_benchmark: a torch.distributed process group (one process, gloo, a file rendezvous).
  msprobe's free_benchmark asks torch.distributed.get_rank() for each row and catches only
  RuntimeError; torch >= 2.4 raises ValueError without a group, and msprobe then drops the row.
- nothing else: no torch_npu (msprobe 8.3.3 imports it only where present; "fuzz_device": "npu"
  means the tensors' own device).
"""
import json
import os
import pathlib
import sys
import tempfile
import types

import numpy as np
import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))


def one_process_group():
    import torch.distributed as dist
    if not dist.is_initialized():
        fd, path = tempfile.mkstemp(prefix="msprobe_legacy_pg_")
        os.close(fd)
        os.unlink(path)
        dist.init_process_group("gloo", init_method="file://" + path, rank=0, world_size=1)


def free_benchmark(config, state, steps, optimizer="checked"):
    import fragile_model
    one_process_group()
    from msprobe.pytorch import PrecisionDebugger
    model, x, small = fragile_model.load_state(state)
    debugger = PrecisionDebugger(config_path=config)
    fragile_model.train(model, x, small, steps=int(steps), debugger=debugger,
                        optimizer_checked=optimizer == "checked")
    dump = pathlib.Path(json.loads(pathlib.Path(config).read_text())["dump_path"])
    found = sorted(dump.rglob("free_benchmark.csv"))
    print(json.dumps({"csv": [str(p) for p in found]}))


def module_tree(names):
    """A module whose named_parameters() are exactly `names` (dotted paths), in that order."""
    root = torch.nn.Module()
    for name in names:
        *path, leaf = name.split(".")
        node = root
        for part in path:
            if not hasattr(node, part):
                node.add_module(part, torch.nn.Module())
            node = getattr(node, part)
        node.register_parameter(leaf, torch.nn.Parameter(torch.zeros(0)))
    return root


def grad_monitor(dump, grads, level, bounds):
    from msprobe.pytorch.grad_probe.grad_monitor import GradientMonitor
    data = np.load(grads)
    steps = sorted({int(k.split("/", 1)[0]) for k in data.files})
    names = [k.split("/", 1)[1] for k in data.files if k.startswith(f"{steps[0]}/")]
    model = module_tree(names)
    common = types.SimpleNamespace(rank=[], step=[], dump_path=dump)
    task = types.SimpleNamespace(grad_level=level, param_list=[], bounds=json.loads(bounds))
    GradientMonitor(common, task).monitor(model)
    params = dict(model.named_parameters())
    opt = torch.optim.SGD(model.parameters(), lr=0.0)
    for s in steps:
        for name, p in params.items():
            g = torch.from_numpy(data[f"{s}/{name}"])
            p.data = torch.zeros_like(g)
            p.grad = g
        opt.step()  # msprobe's optimizer pre-step hook records p.grad
    print(json.dumps({"steps": steps, "params": names}))


def grad_compare(run1, run2, out):
    from msprobe.core.grad_probe.grad_compare import GradComparator
    GradComparator.compare_distributed(run1, run2, out)


if __name__ == "__main__":
    commands = {"free-benchmark": free_benchmark, "grad-monitor": grad_monitor,
                "grad-compare": grad_compare}
    commands[sys.argv[1]](*sys.argv[2:])
