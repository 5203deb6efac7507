"""Captures one training step of a small real model for the acc-check tests.

usage: acc_check_dump_script.py gpt|resnet L1|L2 statistics|tensor OUT [--tanh-gelu]
--tanh-gelu: F.gelu computes the tanh approximation (a faulty kernel, as on a device whose gelu
is approximate); the test then removes the approximate= argument from dump.json so the dump
looks like an ordinary gelu call whose device result is off.
"""
import functools
import pathlib
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "examples" / "python"))
import numprobe  # noqa: E402
import tiny_models as tm  # noqa: E402

which, level, task, out = sys.argv[1:5]
torch.manual_seed(0)
if which == "gpt":
    model, batch, step = tm.make_gpt(), tm.gpt_batch(), tm.gpt_step
else:
    model, batch, step = tm.make_resnet18(), tm.resnet_batch(), tm.resnet_step
opt = torch.optim.SGD(model.parameters(), lr=0.01)
dbg = numprobe.PrecisionDebugger(task=task, dump_path=out, level=level)
dbg.start(model)
if "--tanh-gelu" in sys.argv:  # after start(): numprobe names APIs by the functions torch has
    F.gelu = functools.partial(F.gelu, approximate="tanh")
step(model, opt, batch)
dbg.stop()
dbg.step()
