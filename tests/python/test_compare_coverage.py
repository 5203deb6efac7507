"""A compare that compared nothing, or little, says so (summary.json "coverage", the CLI's lines and exit
status): "no divergence" is said only of rows that were compared."""
import json
import subprocess

from conftest import CLI


def leaf(v):
    return {"type": "torch.Tensor", "dtype": "torch.float32", "shape": [4], "Max": v, "Min": -v,
            "Mean": 0.0, "Norm": 2 * v, "requires_grad": False}


def entries(n, prefix="Functional.relu"):
    return {f"{prefix}.{i}.forward": {"input_args": [leaf(1.0 + i)], "input_kwargs": {},
                                      "output": [leaf(1.0 + i)]} for i in range(n)}


def write(root, where, data):
    """where: [(step, rank dir name)]; every rank dir gets the same entries."""
    for step, rank in where:
        d = root / f"step{step}" / rank
        d.mkdir(parents=True)
        (d / "dump.json").write_text(json.dumps({"task": "statistics", "level": "L1", "framework": "pytorch",
                                                 "dump_data_dir": None, "data": data}))


def compare(target, golden, out):
    p = subprocess.run([str(CLI), "compare", "-t", str(target), "-g", str(golden), "-o", str(out)],
                       capture_output=True, text=True)
    summary = json.loads((out / "summary.json").read_text())
    return p, summary


def test_no_step_or_rank_pairs_is_nothing_compared(tmp_path):
    write(tmp_path / "t", [(0, "rank"), (1, "rank")], entries(3))
    write(tmp_path / "g", [(0, "rank0"), (3, "rank1")], entries(3))
    p, s = compare(tmp_path / "t", tmp_path / "g", tmp_path / "out")
    assert p.returncode == 1, p.stdout + p.stderr
    assert "nothing compared" in p.stderr
    assert "no divergence" not in p.stdout
    assert s["coverage"] == "nothing_compared"
    assert all(pair["coverage"] == "nothing_compared" for pair in s["pairs"])


def test_a_dump_against_an_empty_dump_is_nothing_compared(tmp_path):
    write(tmp_path / "t", [(0, "rank0")], entries(5))
    write(tmp_path / "g", [(0, "rank0")], {})
    p, s = compare(tmp_path / "t", tmp_path / "g", tmp_path / "out")
    assert p.returncode == 1, p.stdout + p.stderr
    (pair,) = s["pairs"]
    assert pair["matched"] == 0 and pair["unmatched_target"] == 10  # an input and an output row each
    assert pair["coverage"] == "nothing_compared" and s["coverage"] == "nothing_compared"
    assert "nothing compared: no row paired" in p.stdout
    assert "no divergence" not in p.stdout


def test_mostly_unmatched_is_said_beside_no_divergence(tmp_path):
    # Two of eight APIs exist on both sides: the rest was never compared.
    write(tmp_path / "t", [(0, "rank0")], entries(8))
    write(tmp_path / "g", [(0, "rank0")], entries(2))
    p, s = compare(tmp_path / "t", tmp_path / "g", tmp_path / "out")
    assert p.returncode == 0, p.stderr
    (pair,) = s["pairs"]
    assert pair["coverage"] == "mostly_unmatched" and s["coverage"] == "mostly_unmatched"
    assert pair["first_divergence"] is None
    assert "most of the two runs was not compared" in p.stdout
    assert "no divergence beyond noise" not in p.stdout


def test_a_full_compare_is_compared(tmp_path):
    write(tmp_path / "t", [(0, "rank0")], entries(4))
    write(tmp_path / "g", [(0, "rank0")], entries(4))
    p, s = compare(tmp_path / "t", tmp_path / "g", tmp_path / "out")
    assert p.returncode == 0 and s["coverage"] == "compared"
    assert "no divergence beyond noise" in p.stdout


def test_an_unreadable_stack_json_is_reported(tmp_path):
    write(tmp_path / "t", [(0, "rank0")], entries(2))
    write(tmp_path / "g", [(0, "rank0")], entries(2))
    stack = tmp_path / "t" / "step0" / "rank0" / "stack.json"
    stack.write_text('{"0": [["Functional.relu.0.forward"], ["File a.py, line 1')  # cut mid-write
    p = subprocess.run([str(CLI), "compare", "-t", str(tmp_path / "t"), "-g", str(tmp_path / "g"),
                        "-o", str(tmp_path / "out"), "-s"], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    s = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert any(str(stack) in problem for problem in s["problems"]), s["problems"]
    assert f"warning: target: {stack}" in p.stdout
    assert "has no readable stack.json, its NPU_Stack_Info is N/A" in p.stdout
