"""MindSpore capture (numprobe.PrecisionDebugger on a mindspore.nn.Cell, PyNative, CPU): names and
layout as msprobe's MindSpore dumps, values from the engine, files read back by numprobe's own
reader, compare of two runs, and the training left bitwise unchanged. Run by `make test-mindspore`
(.venv/mindspore); skipped where MindSpore is not installed (the torch lanes)."""
import glob
import json
import pathlib
import re

import numpy as np
import pytest

pytest.importorskip("mindspore.nn", reason="MindSpore is not installed (the MindSpore lane has it)")

import ms_models  # noqa: E402
import numprobe  # noqa: E402
from conftest import rank_dir  # noqa: E402

CELL = re.compile(r"^Cell\.[\w.]+\.[A-Za-z]\w*\.(forward|backward|parameters_grad)\.\d+$")
API = re.compile(r"^(Functional|Tensor|Mint|MintFunctional|Primitive)\.[\w.]+\.\d+\.(forward|backward)$")
# MindSpore's dtype spellings, as msprobe's MindSpore dumps write them.
MS_DTYPES = {"Float32", "Float16", "BFloat16", "Float64", "Int32", "Int64", "Bool", "UInt8", "Int8"}


def capture(out, level, task="statistics", faulty_eps=None, steps=1, top=None, **cfg):
    net, x, y = ms_models.make(faulty_eps=faulty_eps)
    config = {"task": task, "dump_path": str(out), "level": level, **(top or {})}
    if cfg:
        config[task] = cfg
    path = pathlib.Path(str(out) + ".config.json")
    path.write_text(json.dumps(config))
    dbg = numprobe.PrecisionDebugger(config_path=str(path))
    try:
        losses, grads = ms_models.train_step(net, x, y, dbg, steps=steps)
    finally:
        dbg.close()
    first = min(int(d.name[4:]) for d in pathlib.Path(out).glob("step*"))
    return losses, grads, rank_dir(pathlib.Path(out) / f"step{first}")


def read(rank):
    return json.loads((rank / "dump.json").read_text())


def leaves(value):
    if isinstance(value, dict):
        if value.get("type") == "mindspore.Tensor":
            yield value
            return
        for v in value.values():
            yield from leaves(v)
    elif isinstance(value, list):
        for v in value:
            yield from leaves(v)


def test_the_mindspore_debugger_is_chosen_for_a_cell(tmp_path):
    from numprobe.mindspore import PrecisionDebugger
    net, _, _ = ms_models.make()
    dbg = numprobe.PrecisionDebugger(dump_path=str(tmp_path), level="L0", model=net)
    try:
        assert isinstance(dbg, PrecisionDebugger) and isinstance(dbg, numprobe.PrecisionDebugger)
    finally:
        dbg.close()


@pytest.mark.parametrize("level", ["L0", "L1", "mix"])
def test_levels_write_msprobe_names_and_layout(tmp_path, cli, level):
    _, _, rank = capture(tmp_path / "d", level)
    dump = read(rank)
    assert (dump["task"], dump["level"], dump["framework"]) == ("statistics", level, "mindspore")
    names = list(dump["data"])
    cells = [n for n in names if n.startswith("Cell.")]
    apis = [n for n in names if not n.startswith("Cell.")]
    assert all(CELL.match(n) for n in cells), cells
    assert all(API.match(n) for n in apis), apis
    if level == "L0":
        assert not apis and cells
    elif level == "L1":
        assert not cells and apis
    else:
        assert cells and apis
    if level != "L1":
        # Every cell but the root, by its path and class; forward and backward of each.
        for path, cls in [("embed", "Dense"), ("blocks.0.ln1", "LayerNorm"), ("blocks.1.fc2", "Dense"),
                          ("blocks.1", "Block"), ("head", "Dense")]:
            for d in ("forward", "backward"):
                assert f"Cell.{path}.{cls}.{d}.0" in names, (path, d)
        assert not any(n.startswith("Cell.Net.") for n in names)  # the root is not dumped
        fwd = dump["data"]["Cell.blocks.0.fc1.Dense.forward.0"]
        assert list(fwd) == ["input_args", "input_kwargs", "output"]
        bwd = dump["data"]["Cell.blocks.0.fc1.Dense.backward.0"]
        assert list(bwd) == ["input", "output"]
        assert bwd["input"][0]["shape"] == [2, 5, 2 * ms_models.D]  # gradient of the output
    if level != "L0":
        for n in ("Functional.gelu.0.forward", "Functional.gelu.1.backward",
                  "Functional.softmax.0.forward", "Functional.mse_loss.0.backward",
                  "Primitive.matmul.MatMul.0.forward", "Primitive.layer_norm.LayerNorm.3.backward",
                  "Tensor.swapaxes.0.forward"):
            assert n in names, n
    for leaf in leaves(dump["data"]):
        assert leaf["dtype"] in MS_DTYPES, leaf
    # stack.json names every entry but parameter gradients (msprobe writes none for them);
    # construct.json is written with cells only.
    stack = json.loads((rank / "stack.json").read_text())
    stacked = {n for group in stack.values() for n in group[0]}
    assert stacked == {n for n in names if ".parameters_grad." not in n}
    construct = json.loads((rank / "construct.json").read_text())
    if level == "mix":
        assert construct["Functional.gelu.0.forward"] == "Cell.blocks.0.Block.forward.0"
        assert construct["Cell.blocks.0.fc1.Dense.forward.0"] == "Cell.blocks.0.Block.forward.0"
        assert construct["Cell.blocks.0.Block.forward.0"] is None
        assert construct["Functional.gelu.0.backward"] == "Cell.blocks.0.Block.backward.0"
    if level == "L1":
        assert construct == {}


def test_numprobe_reads_the_dump(tmp_path, cli):
    _, _, rank = capture(tmp_path / "d", "mix")
    out = cli("info", rank).stdout
    assert "framework mindspore" in out and "problems: none" in out, out
    n = len(read(rank)["data"])
    assert re.search(rf"entries {n}\b", out), out


def test_statistics_are_the_engines_float64_statistics(tmp_path):
    net, x, y = ms_models.make()
    _, _, rank = capture(tmp_path / "d", "L0")
    leaf = read(rank)["data"]["Cell.embed.Dense.forward.0"]["input_args"][0]
    v = x.asnumpy().astype(np.float64)
    assert leaf["shape"] == list(v.shape) and leaf["dtype"] == "Float32"
    assert leaf["Max"] == v.max() and leaf["Min"] == v.min()
    assert leaf["Mean"] == pytest.approx(v.mean(), rel=1e-12)
    assert leaf["Norm"] == pytest.approx(np.sqrt((v * v).sum()), rel=1e-12)


def test_parameter_gradients_are_recorded_per_cell(tmp_path):
    net, _, _ = ms_models.make()
    names = [p.name for p in net.trainable_params()]
    _, grads, rank = capture(tmp_path / "d", "L0")
    data = read(rank)["data"]
    entry = data["Cell.blocks.0.fc1.Dense.parameters_grad.0"]
    assert sorted(entry) == ["bias", "weight"]
    for pname in ("weight", "bias"):
        g = grads[names.index(f"blocks.0.fc1.{pname}")].astype(np.float64)
        leaf = entry[pname]
        assert leaf["shape"] == list(g.shape)
        assert (leaf["Max"], leaf["Min"]) == (g.max(), g.min())
        assert leaf["Norm"] == pytest.approx(np.sqrt((g * g).sum()), rel=1e-12)
    # One entry per cell that owns parameters: the Denses and LayerNorms, not the Blocks.
    owners = {n.rsplit(".parameters_grad.", 1)[0] for n in data if ".parameters_grad." in n}
    assert "Cell.embed.Dense" in owners and "Cell.blocks.1.ln2.LayerNorm" in owners
    assert not any(o.endswith(".Block") for o in owners)


def test_cell_keyword_arguments(tmp_path):
    import mindspore as ms
    from numprobe.mindspore import PrecisionDebugger

    class Outer(ms.nn.Cell):
        def __init__(self):
            super().__init__()
            self.inner = ms_models.Scaled()

        def construct(self, x):
            return self.inner(x, scale=0.5).sum()

    net = Outer()
    x = ms.Tensor(np.ones((2, ms_models.D), np.float32))
    dbg = PrecisionDebugger(dump_path=str(tmp_path / "d"), level="L0")
    dbg.start(net)
    out = net(x)  # a plain forward, no gradients: forward entries only
    dbg.stop()
    dbg.close()
    entry = read(rank_dir(tmp_path / "d" / "step0"))["data"]["Cell.inner.Scaled.forward.0"]
    assert entry["input_kwargs"] == {"scale": {"type": "float", "value": 0.5}}
    assert entry["output"][0]["shape"] == [2, ms_models.D]
    assert float(out.asnumpy()) != 0


def test_step_and_list_filters(tmp_path):
    _, _, rank = capture(tmp_path / "s", "L1", steps=3, top={"step": [1]})
    assert sorted(d.name for d in (tmp_path / "s").iterdir()) == ["step1"]
    assert read(rank)["data"]
    _, _, rank = capture(tmp_path / "l", "L1", list=["gelu"])
    names = set(read(rank)["data"])
    assert names == {f"Functional.gelu.{i}.{d}" for i in (0, 1) for d in ("forward", "backward")}


def test_a_list_item_naming_an_api_numprobe_does_not_hook_is_named(tmp_path):
    # Bad input of the issue: "an API numprobe cannot hook" is a named warning, never a silent
    # empty dump. Cell names and substrings ("gelu") are the filter's; API entry names are checked
    # against what was hooked, primitives of the model included.
    import warnings
    from numprobe.mindspore.api_wrap import UnhookedApiWarning
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _, _, rank = capture(tmp_path / "u", "L1", list=[
            "Mint.no_such_api", "Functional.gelu.0.forward", "Tensor.__add__", "gelu",
            "Cell.blocks.0.ln1.LayerNorm", "Primitive.layer_norm.LayerNorm", "Primitive.nope.Nope"])
    named = [str(w.message) for w in caught if issubclass(w.category, UnhookedApiWarning)]
    assert len(named) == 2, named
    assert "Mint.no_such_api" in named[0] and "u.config.json" in named[0]
    assert "Primitive.nope.Nope" in named[1]
    assert "Functional.gelu.0.forward" in read(rank)["data"]  # the hooked ones still dump


def test_md5_and_tensor_tasks(tmp_path):
    import zlib
    net, x, y = ms_models.make()
    _, _, rank = capture(tmp_path / "m", "L0", summary_mode="md5")
    leaf = read(rank)["data"]["Cell.embed.Dense.forward.0"]["input_args"][0]
    assert leaf["md5"] == f"{zlib.crc32(x.asnumpy().tobytes()):08x}"
    _, _, rank = capture(tmp_path / "t", "L1", task="tensor")
    dump = read(rank)
    assert dump["dump_data_dir"] and pathlib.Path(dump["dump_data_dir"]).is_dir()
    files = glob.glob(str(rank / "dump_tensor_data" / "*.npy"))
    assert files
    leaf = dump["data"]["Primitive.matmul.MatMul.0.forward"]["input_args"][0]
    saved = np.load(rank / "dump_tensor_data" / leaf["data_name"])
    assert leaf["data_name"] == "Primitive.matmul.MatMul.0.forward.input.0.npy"
    np.testing.assert_array_equal(saved, x.asnumpy().reshape(-1, 8))


@pytest.mark.parametrize("level", ["L0", "L1", "mix"])
def test_training_is_bitwise_unchanged(tmp_path, level):
    net, x, y = ms_models.make()
    want_losses, want_grads = ms_models.train_step(net, x, y, steps=2)
    got_losses, got_grads, _ = capture(tmp_path / "d", level, steps=2)
    for a, b in zip(want_losses, got_losses):
        assert a.tobytes() == b.tobytes()
    assert len(want_grads) == len(got_grads)
    for a, b in zip(want_grads, got_grads):
        assert a.tobytes() == b.tobytes()


def test_capture_is_taken_off_by_close(tmp_path):
    from mindspore import Tensor, ops
    gelu, add = ops.gelu, Tensor.__add__
    capture(tmp_path / "d", "mix")
    assert ops.gelu is gelu and Tensor.__add__ is add


@pytest.mark.parametrize("level", ["L0", "mix"])
def test_compare_two_runs(tmp_path, cli, level):
    _, _, a = capture(tmp_path / "a", level)
    _, _, b = capture(tmp_path / "b", level)
    cli("compare", "-t", b, "-g", a, "-o", tmp_path / "same")
    (pair,) = json.loads((tmp_path / "same" / "summary.json").read_text())["pairs"]
    assert pair["error"] == 0 and pair["first_divergence"] is None, pair
    assert pair["matched"] == pair["rows"]
    _, _, bad = capture(tmp_path / "bad", level, faulty_eps=1e-2)
    cli("compare", "-t", bad, "-g", a, "-o", tmp_path / "cmp", check=False)
    (pair,) = json.loads((tmp_path / "cmp" / "summary.json").read_text())["pairs"]
    fd = pair["first_divergence"]
    want = ("Cell.blocks.1.ln2.LayerNorm.forward.0" if level == "L0"
            else "Primitive.layer_norm.LayerNorm.3.forward")
    assert fd is not None and fd["entry"] == want, fd
    # The same pair as msprobe's model hierarchy for the browser.
    cli("graph", "-t", bad, "-g", a, "-o", tmp_path / "g.vis.db")
    assert (tmp_path / "g.vis.db").stat().st_size > 0


def test_leaves_have_the_members_of_msprobes_mindspore_leaves(tmp_path):
    # msprobe's MindSpore data processor writes type, dtype, shape and the statistics (md5,
    # data_name where asked); no requires_grad, which its torch leaves have.
    allowed = {"type", "dtype", "shape", "Max", "Min", "Mean", "Norm", "md5", "data_name",
               "nan_count", "pos_inf_count", "neg_inf_count"}
    _, _, rank = capture(tmp_path / "d", "mix")
    found = [leaf for entry in read(rank)["data"].values() for leaf in leaves(entry)]
    assert len(found) > 100
    for leaf in found:
        assert set(leaf) <= allowed, leaf
        assert list(leaf)[:3] == ["type", "dtype", "shape"], leaf


def test_bad_input_is_named(tmp_path):
    import mindspore as ms
    from numprobe.mindspore import NumprobeError, PrecisionDebugger
    with pytest.raises(NumprobeError, match="level"):
        PrecisionDebugger(dump_path=str(tmp_path), level="debug")  # L2: test_ms_graph_mode.py
    dbg = PrecisionDebugger(dump_path=str(tmp_path), level="L0")
    try:
        with pytest.raises(NumprobeError, match="Cell"):
            dbg.start(object())
        with pytest.raises(NumprobeError, match="model"):
            dbg.start()
        ms.set_context(mode=ms.GRAPH_MODE)
        try:
            with pytest.raises(NumprobeError, match="PyNative"):
                dbg.start(ms_models.make()[0])
        finally:
            ms.set_context(mode=ms.PYNATIVE_MODE)
    finally:
        dbg.close()
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"task": "statistics", "levle": "L1"}))
    with pytest.raises(NumprobeError, match="levle"):
        PrecisionDebugger(config_path=str(bad))


def test_backward_after_stop_writes_nothing(tmp_path):
    import mindspore as ms
    from numprobe.mindspore import PrecisionDebugger
    net, x, y = ms_models.make()
    dbg = PrecisionDebugger(dump_path=str(tmp_path / "d"), level="mix")
    dbg.start(net)
    net(x, y)  # forward only, inside start/stop
    dbg.stop()
    ms.value_and_grad(net, None, net.trainable_params())(x, y)  # outside: hooks stay quiet
    dbg.close()
    names = list(read(rank_dir(tmp_path / "d" / "step0"))["data"])
    assert names and not any(".backward" in n or "parameters_grad" in n for n in names), names


def test_a_jit_compiled_cell_is_named(tmp_path):
    # A cell whose construct is compiled by @jit inside PyNative: MindSpore runs no hook in it, and
    # numprobe's hooks on its sub-cells made the graph compiler stop the step with an unrelated
    # TypeError. numprobe names the cell instead, before the step.
    import mindspore as ms
    from mindspore import nn, ops
    from numprobe.mindspore import NumprobeError, PrecisionDebugger

    class Inner(nn.Cell):
        def __init__(self):
            super().__init__()
            self.fc = nn.Dense(4, 4)

        @ms.jit
        def construct(self, x):
            return ops.relu(self.fc(x))

    class Outer(nn.Cell):
        def __init__(self):
            super().__init__()
            self.inner = Inner()
            self.head = nn.Dense(4, 2)

        def construct(self, x):
            return self.head(self.inner(x))

    for level in ("L0", "L1", "mix"):
        dbg = PrecisionDebugger(dump_path=str(tmp_path / level), level=level)
        try:
            with pytest.raises(NumprobeError, match=r"Cell\.inner\.Inner.*jit"):
                dbg.start(Outer())
        finally:
            dbg.close()


def test_a_pytorch_only_field_is_named(tmp_path):
    from numprobe.capture_args import OtherFrameworkFieldWarning
    from numprobe.mindspore import PrecisionDebugger
    cfg = tmp_path / "pt.json"
    cfg.write_text(json.dumps({"task": "statistics", "dump_path": str(tmp_path / "d"), "level": "L1",
                               "statistics": {"bench_path": "/elsewhere", "list": []}}))
    with pytest.warns(OtherFrameworkFieldWarning, match=r"pt\.json.*statistics\.bench_path.*PyTorch"):
        PrecisionDebugger(config_path=str(cfg)).close()
