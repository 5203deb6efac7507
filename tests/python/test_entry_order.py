"""Where a module's backward entries sit in dump.json: msprobe lists a module's parameters_grad
before its backward entry (torch runs the AccumulateGrad nodes before the node msprobe's full
backward hook adds), in construct.json too, and numprobe keeps that order although it observes a
module's backward on the nodes the call made, which finish first. Regression: after issue 37's
observer, `Module.head.Linear.backward.0` came before `Module.head.Linear.parameters_grad.0`, and
a LayerNorm's parameters_grad came after its parent block's backward."""
import json
import sys

import pytest

from conftest import FIXTURES, PYDIR, rank_dir

sys.path.insert(0, str(PYDIR))
torch = pytest.importorskip("torch")
import numprobe  # noqa: E402


class _Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.ln = torch.nn.LayerNorm(8)
        self.fc = torch.nn.Linear(8, 8)

    def forward(self, x):
        return self.fc(self.ln(x)) + x


def _order_violations(keys, data=None):
    """Modules whose parameters_grad entry comes after their backward entry. With `data`, a module
    whose backward passes no gradient on (its input needs none: the first conv) is left out: its
    backward hook has nothing to wait for, and msprobe writes it first."""
    bad = []
    for k in keys:
        if ".parameters_grad." not in k:
            continue
        module = k.split(".parameters_grad.")[0]
        backward = f"{module}.backward.{k.rsplit('.', 1)[1]}"
        if data is not None and backward in data and not any(data[backward].get("output") or []):
            continue
        if backward in keys and keys.index(backward) < keys.index(k):
            bad.append(module)
    return bad


def test_msprobes_own_dump_lists_parameters_grad_first():
    """The reference: msprobe's ResNet-50 dump (v8.3.3, GPU) has the order this file asserts."""
    d = json.loads((FIXTURES / "quick_start_resnet50_gpu_mix_statistics" / "step0" / "proc2016" /
                    "dump.json").read_text())["data"]
    keys = list(d)
    assert any(".parameters_grad." in k for k in keys)
    assert _order_violations(keys, d) == []


@pytest.mark.parametrize("level", ["L0", "mix"])
def test_parameters_grad_before_the_module_backward(tmp_path, level):
    torch.manual_seed(0)
    model = torch.nn.Sequential(_Block(), _Block(), torch.nn.Linear(8, 2))
    dbg = numprobe.PrecisionDebugger(dump_path=str(tmp_path), level=level)
    dbg.start(model)
    model(torch.randn(4, 8)).pow(2).mean().backward()
    dbg.stop()
    dbg.step()
    dbg.close()
    rank = rank_dir(tmp_path / "step0")
    data = json.loads((rank / "dump.json").read_text())["data"]
    keys = list(data)
    assert sum(".parameters_grad." in k for k in keys) == 5, keys  # 2 x (ln, fc) + the head
    assert sum(k.startswith("Module.") and ".backward." in k for k in keys) >= 5, keys
    assert _order_violations(keys, data) == [], keys
    construct = list(json.loads((rank / "construct.json").read_text()))
    assert _order_violations([k for k in construct if k in data], data) == [], construct
