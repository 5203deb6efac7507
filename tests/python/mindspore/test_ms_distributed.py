"""Collectives in a MindSpore capture: ``mint.distributed`` calls recorded as msprobe's
``MintDistributed.<api>.<n>.forward`` (``communication.comm_func`` as ``Distributed.*``), inputs as
they were before the call, output the arguments after it, an async call waited for. MindSpore's
CPU backend runs a one-process group under ``msrun --worker_num=1`` (its comm_func collectives have
no CPU kernel, so only mint.distributed's run here). Run by `make test-mindspore`."""
import json
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip("mindspore.nn", reason="MindSpore is not installed (the MindSpore lane has it)")

HERE = pathlib.Path(__file__).resolve().parent


def run_msrun(tmp_path, task):
    msrun = pathlib.Path(sys.executable).parent / "msrun"
    if not msrun.exists():
        pytest.skip(f"no msrun next to {sys.executable}: MindSpore's launcher is needed for a group")
    env = dict(os.environ)
    env["PATH"] = f"{msrun.parent}{os.pathsep}{env.get('PATH', '')}"  # msrun starts `python`
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(HERE), env.get("PYTHONPATH", "")]))
    port = 20000 + os.getpid() % 20000  # several lanes may run at once
    logs = tmp_path / "msrun_log"
    dump = tmp_path / "dump"
    p = subprocess.run([str(msrun), "--worker_num=1", "--local_worker_num=1",
                        f"--master_port={port}", f"--log_dir={logs}", "--join=True",
                        str(HERE / "ms_dist_script.py"), str(dump), task],
                       env=env, capture_output=True, text=True, timeout=300)
    log = (logs / "worker_0.log").read_text(errors="replace") if (logs / "worker_0.log").exists() else ""
    assert p.returncode == 0, f"msrun failed ({p.returncode}):\n{p.stdout[-3000:]}\n{log[-3000:]}"
    found = sorted(dump.glob("step0/*/dump.json"))
    assert len(found) == 1, f"one rank's dump.json expected under {dump}: {found}\n{log[-2000:]}"
    return json.loads(found[0].read_text()), log


def stats(leaf):
    return [leaf["Max"], leaf["Min"], leaf["Mean"], leaf["Norm"]]


def np_stats(a):
    a = np.asarray(a, dtype=np.float64)
    return [a.max(), a.min(), a.mean(), np.sqrt((a * a).sum())]


def test_collectives_are_recorded_with_msprobes_names_and_values(tmp_path):
    dump, log = run_msrun(tmp_path, "statistics")
    assert dump["framework"] == "mindspore"
    data = dump["data"]
    names = [n for n in data if "Distributed" in n]
    assert names == ["MintDistributed.all_reduce.0.forward", "MintDistributed.all_reduce.1.forward",
                     "MintDistributed.broadcast.0.forward"], list(data)
    y = (np.arange(6, dtype=np.float32).reshape(2, 3) - 2.5) * 2  # a one-process sum: unchanged
    for name in names:
        e = data[name]
        assert set(e) == {"input_args", "input_kwargs", "output"}, e
        leaf = e["input_args"][0]
        assert leaf["type"] == "mindspore.Tensor" and leaf["dtype"] == "Float32"
        assert leaf["shape"] == [2, 3]
        assert "requires_grad" not in leaf
        np.testing.assert_allclose(stats(leaf), np_stats(y), rtol=1e-12)
        # msprobe's output of a collective: its arguments after the call
        out = e["output"][0]
        np.testing.assert_allclose(stats(out), np_stats(y), rtol=1e-12)
    op = {"type": "str", "value": "sum"}
    asynchronous = {"type": "bool", "value": True}
    assert data["MintDistributed.all_reduce.1.forward"]["input_kwargs"] == {
        "op": op, "async_op": asynchronous}
    assert data["MintDistributed.all_reduce.1.forward"]["output"][1:] == [op, asynchronous]
    assert data["MintDistributed.broadcast.0.forward"]["input_args"][1] == {"type": "int", "value": 0}
    # no backward entry for a collective (the in-place tensors stay the caller's)
    assert not any(n.startswith("MintDistributed") and n.endswith("backward") for n in data)
    assert "values after" in log


def test_collectives_in_tensor_mode_save_inputs_and_outputs(tmp_path):
    dump, _ = run_msrun(tmp_path, "tensor")
    e = dump["data"]["MintDistributed.all_reduce.0.forward"]
    data_dir = pathlib.Path(dump["dump_data_dir"])
    y = (np.arange(6, dtype=np.float32).reshape(2, 3) - 2.5) * 2
    for leaf in (e["input_args"][0], e["output"][0]):
        saved = np.load(data_dir / leaf["data_name"])
        np.testing.assert_array_equal(saved, y)


def test_distributed_names_are_msprobes():
    from numprobe.mindspore import api_list, api_wrap
    spaces = {prefix: (module, names) for prefix, module, names in api_wrap._namespaces()}
    assert set(api_list.DISTRIBUTED_PREFIXES) <= set(spaces)
    module, names = spaces["MintDistributed"]
    assert module.__name__ == "mindspore.mint.distributed"
    for name in ("all_reduce", "all_gather", "broadcast", "reduce_scatter", "all_to_all"):
        assert name in names and callable(getattr(module, name))
    module, names = spaces["Distributed"]
    assert module.__name__ == "mindspore.communication.comm_func"
    assert "all_reduce" in names and "all_gather_into_tensor" in names
