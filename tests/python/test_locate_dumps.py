"""The Python fronts read dumps through the engine (numprobe._engine): rank dump discovery
(find_rank_dumps), stack.json and construct.json. locate's and acc-check's answers are those of
compare and info, and a malformed side file is an error naming it."""
import json
import sys

import pytest

from conftest import FIXTURES, PYDIR

sys.path.insert(0, str(PYDIR))
from numprobe import _engine  # noqa: E402
from numprobe.acc_check.plan import resolve_api_info  # noqa: E402
from numprobe.locate import dumps  # noqa: E402

MULTI = FIXTURES / "visualization_multi_step_rank"
RESNET = FIXTURES / "quick_start_resnet50_gpu_mix_statistics"


def rank(root, step, name, files=("dump.json",)):
    d = root / f"step{step}" / name
    d.mkdir(parents=True)
    for f in files:
        (d / f).write_text('{"data": {}}')
    return d


def test_engine_finds_rank_dumps_in_step_then_rank_order(tmp_path):
    for step, name in [(10, "rank0"), (2, "rank10"), (2, "rank2"), (2, "rank")]:
        rank(tmp_path, step, name)
    (tmp_path / "step2" / "rank2" / "dump_tensor_data").mkdir()
    found = _engine.find_rank_dumps(str(tmp_path))
    assert [(d["step"], d["rank"], d["rank_label"]) for d in found] == \
        [(2, -1, "rank"), (2, 2, "rank2"), (2, 10, "rank10"), (10, 0, "rank0")]
    assert all(d["has_dump_json"] and not d["has_journal"] for d in found)
    with pytest.raises(_engine.NumprobeError, match="no such file"):
        _engine.find_rank_dumps(str(tmp_path / "nowhere"))


def test_rank_dirs_keeps_the_rounds_layout():
    assert dumps.rank_dirs(str(MULTI)) == {
        (0, "rank0"): str(MULTI / "step0" / "rank0"), (0, "rank1"): str(MULTI / "step0" / "rank1"),
        (1, "rank0"): str(MULTI / "step1" / "rank0"), (2, "rank0"): str(MULTI / "step2" / "rank0")}
    # A single process dump is keyed "proc": its pid changes every run.
    assert dumps.rank_dirs(str(RESNET)) == {(0, "proc"): str(RESNET / "step0" / "proc2016"),
                                            (1, "proc"): str(RESNET / "step1" / "proc2016")}
    # Dump roots below the one named, or no dump at all, are no rank dumps of it.
    assert dumps.rank_dirs(str(FIXTURES / "interop_torch113")) == {}
    assert dumps.rank_dirs(str(FIXTURES / "no_such_dir")) == {}


def test_rank_dirs_skips_what_is_not_a_rank_dump(tmp_path):
    rank(tmp_path, 0, "rank0")
    rank(tmp_path, 0, "rank1", files=())          # no dump.json: nothing was dumped there
    rank(tmp_path, 0, "logs")                     # not a rank directory
    (tmp_path / "stepx" / "rank0").mkdir(parents=True)
    assert dumps.rank_dirs(str(tmp_path)) == {(0, "rank0"): str(tmp_path / "step0" / "rank0")}


def test_source_line_reads_both_stack_layouts(tmp_path):
    frames = ["File /usr/lib/python3/dist-packages/torch/nn/modules/module.py, line 1, in _call",
              "File /home/u/train.py, line 42, in forward,\n  y = self.fc(x)",
              "File /home/u/train.py, line 90, in <module>, loss = model(x)"]
    dedup = tmp_path / "dedup"
    dedup.mkdir()
    (dedup / "stack.json").write_text(json.dumps(
        {"0": [["Functional.linear.0.forward", "Functional.relu.0.forward"], frames],
         "1": [["Tensor.add.0.forward"], frames[:1]]}))
    legacy = tmp_path / "legacy"
    legacy.mkdir()
    (legacy / "stack.json").write_text(json.dumps({"Functional.relu.0.forward": frames}))
    want = "File /home/u/train.py, line 42, in forward, y = self.fc(x)"
    assert dumps.source_line(str(dedup), "Functional.relu.0.forward") == want
    assert dumps.source_line(str(legacy), "Functional.relu.0.forward") == want
    # Only torch frames: the first one; an entry without a stack, or no stack.json: None.
    assert dumps.source_line(str(dedup), "Tensor.add.0.forward").endswith("in _call")
    assert dumps.source_line(str(dedup), "Tensor.mul.0.forward") is None
    assert dumps.source_line(str(tmp_path), "Functional.relu.0.forward") is None


def test_source_line_of_a_recorded_stack():
    d = str(RESNET / "step0" / "proc2016")
    stacks = json.loads((RESNET / "step0" / "proc2016" / "stack.json").read_text())
    names, frames = next(iter(stacks.values()))
    line = dumps.source_line(d, names[0])
    assert line and line.split(",")[0] in {f.split(",")[0] for f in frames}


def test_construct_is_the_engines(tmp_path):
    d = RESNET / "step0" / "proc2016"
    assert dumps.construct(str(d)) == json.loads((d / "construct.json").read_text())
    assert dumps.construct(str(tmp_path)) == {}  # no construct.json
    # Megatron's [parent, micro_step] form gives the parent, as the plain form does.
    (tmp_path / "construct.json").write_text(json.dumps(
        {"Module.a.A.forward.0": None, "Module.b.B.forward.0": ["Module.a.A.forward.0", 1]}))
    assert dumps.construct(str(tmp_path)) == {"Module.a.A.forward.0": None,
                                              "Module.b.B.forward.0": "Module.a.A.forward.0"}


@pytest.mark.parametrize("name,text", [("stack.json", '{"0": [["a"], ["f"]'),
                                       ("stack.json", '{"0": [["a"], "f"]}'),
                                       ("construct.json", '{"a": 3}'),
                                       ("construct.json", 'NaN garbage')])
def test_a_malformed_side_file_is_an_error_naming_it(tmp_path, name, text):
    (tmp_path / name).write_text(text)
    with pytest.raises(SystemExit) as e:
        if name == "stack.json":
            dumps.source_line(str(tmp_path), "a")
        else:
            dumps.construct(str(tmp_path))
    assert str(e.value).startswith(f"numprobe locate: error: {tmp_path / name}")


def test_api_info_directories_are_found_by_the_engine(tmp_path):
    one = FIXTURES / "acc_check_input" / "pytorch"
    assert resolve_api_info(str(one)) == str(one / "dump.json")
    assert resolve_api_info(str(one / "dump.json")) == str(one / "dump.json")
    rank(tmp_path / "run", 0, "rank0")
    (tmp_path / "run" / "step0" / "rank0" / "dump_tensor_data").mkdir()
    for named in (tmp_path / "run", tmp_path / "run" / "step0", tmp_path / "run" / "step0" / "rank0"):
        assert resolve_api_info(str(named)) == str(tmp_path / "run" / "step0" / "rank0" / "dump.json")
    with pytest.raises(ValueError, match=r"holds 4 rank dumps \(step0/rank0/dump.json, "
                                         r"step0/rank1/dump.json, step1/rank0/dump.json, "
                                         r"step2/rank0/dump.json\); acc-check checks one"):
        resolve_api_info(str(MULTI))
    # No dump, or only the journal of a writer that died (nothing acc-check can replay).
    (tmp_path / "empty").mkdir()
    rank(tmp_path / "torn", 0, "rank0", files=("dump.journal",))
    for bare in ("empty", "torn"):
        with pytest.raises(ValueError, match="a directory with no dump.json in it"):
            resolve_api_info(str(tmp_path / bare))
