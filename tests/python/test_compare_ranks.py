"""Cross-rank compare: pairs by (step, rank), the origin of a divergence across ranks."""
import json


def leaf(v):
    return {"type": "torch.Tensor", "dtype": "torch.float32", "shape": [4], "Max": v, "Min": -v,
            "Mean": 0.0, "Norm": 2 * v, "requires_grad": False}


def entry(x, y):
    return {"input_args": [leaf(x)], "input_kwargs": {}, "output": [leaf(y)]}


def write_run(root, ranks):
    for rank, data in ranks.items():
        d = root / "step0" / f"rank{rank}"
        d.mkdir(parents=True)
        (d / "dump.json").write_text(json.dumps({"task": "statistics", "level": "L1",
                                                 "framework": "pytorch", "dump_data_dir": None,
                                                 "data": data}))


def run_pair(tmp_path, bad_rank0_gelu):
    # Rank 0 computes gelu wrong before the all_reduce; rank 1 is fine locally, but the
    # all_reduce hands it rank 0's diverged data, and everything after follows.
    good = {r: {"Functional.gelu.0.forward": entry(1.0, 2.0),
                "Distributed.all_reduce.0.forward": entry(2.0, 4.0),
                "Functional.linear.0.forward": entry(4.0, 8.0)} for r in (0, 1)}
    bad = {0: {"Functional.gelu.0.forward": entry(1.0, 2.5 if bad_rank0_gelu else 2.0),
               "Distributed.all_reduce.0.forward": entry(2.5 if bad_rank0_gelu else 2.0, 5.0),
               "Functional.linear.0.forward": entry(5.0, 10.0)},
           1: {"Functional.gelu.0.forward": entry(1.0, 2.0),
               "Distributed.all_reduce.0.forward": entry(2.0, 5.0),
               "Functional.linear.0.forward": entry(5.0, 10.0)}}
    write_run(tmp_path / "good", good)
    write_run(tmp_path / "bad", bad)


def test_origin_is_the_rank_that_diverged_before_the_collective(tmp_path, cli):
    run_pair(tmp_path, bad_rank0_gelu=True)
    out = cli("compare", "-t", tmp_path / "bad", "-g", tmp_path / "good", "-o", tmp_path / "o")
    s = json.loads((tmp_path / "o" / "summary.json").read_text())
    by_rank = {p["rank"]: p for p in s["pairs"]}
    assert by_rank[0]["first_divergence"]["entry"] == "Functional.gelu.0.forward"
    assert by_rank[1]["first_divergence"]["entry"] == "Distributed.all_reduce.0.forward"
    (origin,) = s["origins"]
    assert origin == {"step": 0, "rank": 0, "entry": "Functional.gelu.0.forward",
                      "reason": "outputs_diverge", "collectives_before": 0,
                      "received_by": [1]}
    assert "origin across ranks" in out.stdout and "rank 0" in out.stdout


def test_the_collective_itself_when_every_rank_diverges_in_it(tmp_path, cli):
    run_pair(tmp_path, bad_rank0_gelu=False)  # all_reduce inputs agree, outputs differ everywhere
    cli("compare", "-t", tmp_path / "bad", "-g", tmp_path / "good", "-o", tmp_path / "o")
    s = json.loads((tmp_path / "o" / "summary.json").read_text())
    (origin,) = s["origins"]
    assert origin["rank"] == 0 and origin["entry"] == "Distributed.all_reduce.0.forward"
    assert origin["reason"] == "collective_diverges"
    assert origin["received_by"] == [0, 1]
