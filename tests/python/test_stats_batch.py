"""Device statistics enqueued per section (src/torch/stats_batch.h): the tensors one call, module
or backward entry records are summarised by one multi-tensor launch. Machines without a GPU check
the batching through NUMPROBE_DEFER_CPU_STATS=1, which sends CPU tensors down the deferred route
and runs the kernel's plan on the host when a section is launched (test_cuda.py runs the kernel).

What can go wrong, and what each test holds:
- a section launched after the op it belongs to has run: an in-place op's inputs would be
  summarised after the op (the dumps below would differ from the host route's);
- a leaf resolved before its batch was launched, or from the wrong item: wrong or missing values;
- no batching at all (one launch per tensor): the launch counters say so.
"""
import json
import math
import os
import subprocess
import sys

import pytest

from conftest import PYDIR, rank_dir

torch = pytest.importorskip("torch")
from test_capture import iter_leaves  # noqa: E402

SCRIPT = """
import json, sys, torch
sys.path.insert(0, {pydir!r})
import numprobe
torch.manual_seed(0)
torch.set_num_threads(1)

class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(8, 16)
        self.act = torch.nn.ReLU(inplace=True)
        self.fc2 = torch.nn.Linear(16, 4)

    def forward(self, x):
        h = self.act(self.fc1(x))        # in place on fc1's output
        g = torch.nn.functional.gelu(h)
        g.mul_(2.0)                      # gelu's recorded output changes after its call
        y = self.fc2(g)
        y.add_(torch.ones_like(y))       # an in-place API: its input is recorded before the op
        return torch.relu_(y).sum() + torch.tanh(h.half().float()).mean()

net = Net()
opt = torch.optim.SGD(net.parameters(), lr=0.1)
x = torch.randn(6, 8)
x[0, 0] = float("nan")
x[1, 1] = float("inf")
d = numprobe.PrecisionDebugger(dump_path=sys.argv[1], level=sys.argv[2], step=[0, 1])
for step in range(2):
    d.start(net)
    opt.zero_grad()
    loss = net(torch.nan_to_num(x, nan=0.5, posinf=3.0) if step else x)
    loss.backward()
    opt.step()
    d.stop()
    d.step()
print(json.dumps(d.stats() if hasattr(d, "stats") else {{}}))
d.close()
"""


def capture(tmp_path, level, mode, env):
    script = tmp_path / "net.py"
    script.write_text(SCRIPT.format(pydir=str(PYDIR)))
    out = tmp_path / f"{level}-{mode}"
    r = subprocess.run([sys.executable, str(script), str(out), level], check=True,
                       capture_output=True, text=True, env={**os.environ, **env})
    # Entries reach the writer only after their thread launched their batches; a writer that
    # waits long for one says so.
    assert "internal" not in r.stderr, r.stderr
    stats = json.loads(r.stdout.strip().splitlines()[-1])
    dumps = {}
    for step in ("step0", "step1"):
        with open(rank_dir(out / step) / "dump.json") as f:
            dumps[step] = json.load(f)["data"]
    return dumps, stats


def assert_same_statistics(host, other, what):
    assert list(host) == list(other), what
    n = 0
    for name in host:
        for a, b in zip(iter_leaves(host[name]), iter_leaves(other[name]), strict=True):
            assert a.keys() == b.keys(), (what, name)
            for k, v in a.items():
                if isinstance(v, float) and math.isnan(v):
                    assert isinstance(b[k], float) and math.isnan(b[k]), (what, name, k, a, b)
                elif k in ("Mean", "Norm") and isinstance(v, float):
                    assert b[k] == pytest.approx(v, rel=1e-12), (what, name, k, a, b)
                else:
                    assert b[k] == v, (what, name, k, a, b)
            n += 1
    assert n > 10, what


@pytest.mark.parametrize("level", ["L1", "mix", "L0", "L2"])
def test_batched_sections_give_the_host_statistics_at_every_level(tmp_path, level):
    host, host_stats = capture(tmp_path, level, "host", {})
    batched, stats = capture(tmp_path, level, "batched", {"NUMPROBE_DEFER_CPU_STATS": "1"})
    one_by_one, single = capture(tmp_path, level, "single", {
        "NUMPROBE_DEFER_CPU_STATS": "1", "NUMPROBE_BATCH_DEVICE_STATS": "0"})
    for step in host:
        assert_same_statistics(host[step], batched[step], (level, step, "batched"))
        assert_same_statistics(host[step], one_by_one[step], (level, step, "one by one"))
    # The host route launches nothing; the batched one summarises several leaves per launch (a
    # section of one small tensor takes the per-tensor copy); with batching off every leaf goes
    # alone.
    assert host_stats["stats_batches"] == 0
    assert single["stats_batches"] == 0
    assert 0 < stats["stats_batched"] <= stats["stats_computed"], stats
    assert stats["stats_batches"] * 2 <= stats["stats_batched"], stats


def in_place_calls(tmp_path, device, env):
    """add_, neg_ and relu_ on one tensor at L1: the three entries of the dump."""
    script = tmp_path / "inplace.py"
    script.write_text(f"""
import json, sys, torch
sys.path.insert(0, {str(PYDIR)!r})
import numprobe
x = torch.zeros(300, device={device!r})
d = numprobe.PrecisionDebugger(dump_path=sys.argv[1], level="L1")
d.start()
x.add_(5.0)
torch.relu_(x.neg_())
d.stop()
d.close()
""")
    out = tmp_path / "d"
    subprocess.run([sys.executable, str(script), str(out)], check=True, env={**os.environ, **env})
    with open(rank_dir(out / "step0") / "dump.json") as f:
        return json.load(f)["data"]


def assert_inputs_before_the_calls(data):
    add = data["Tensor.add_.0.forward"]
    assert add["input_args"][0]["Max"] == 0.0 and add["output"][0]["Max"] == 5.0
    neg = data["Tensor.neg_.0.forward"]
    assert neg["input_args"][0]["Min"] == 5.0 and neg["output"][0]["Max"] == -5.0
    relu = data["Functional.relu_.0.forward"]
    assert relu["input_args"][0]["Min"] == -5.0 and relu["output"][0]["Max"] == 0.0


def test_an_in_place_call_keeps_its_inputs_as_they_were(tmp_path):
    # The section of a call's inputs is launched before the call runs: add_'s recorded input is
    # the tensor before the addition, also when its values are summarised later.
    assert_inputs_before_the_calls(
        in_place_calls(tmp_path, "cpu", {"NUMPROBE_DEFER_CPU_STATS": "1"}))
