"""A generated multi-rank dump pair with one fault on one rank that the others receive through a
collective (tests/python/test_compare_shards.py, bench/bench_shard.py).

Each rank runs, per layer, linear -> gelu -> all_reduce. The golden's all_reduce sums every rank's
gelu output. In the target, rank `fault_rank`'s gelu of layer `fault_layer` is off (25 % by default): that rank
diverges in the gelu (its inputs agree), every other rank first in the all_reduce (its inputs agree,
its output does not). The cross-rank origin is (fault_rank, gelu, fault_layer collectives before)."""
import json
import pathlib


def _leaf(v):
    return {"type": "torch.Tensor", "dtype": "torch.float32", "shape": [64], "Max": v, "Min": -v / 2,
            "Mean": v / 4, "Norm": 3 * v, "requires_grad": False}


def _entry(x, y):
    return {"input_args": [_leaf(x)], "input_kwargs": {}, "output": [_leaf(y)]}


def _rank_data(ranks, rank, step, layers, fault, factor):
    """Entries of one rank at one step; fault = (rank, layer) or None."""
    data = {}
    x = [1.0 + 0.01 * r + 0.001 * step for r in range(ranks)]  # every rank's activation
    for layer in range(layers):
        lin = [v * 1.5 for v in x]
        gelu = [v * 0.75 for v in lin]
        if fault and fault[1] == layer:
            gelu[fault[0]] *= factor
        total = sum(gelu) / ranks
        data[f"Functional.linear.{layer}.forward"] = _entry(x[rank], lin[rank])
        data[f"Functional.gelu.{layer}.forward"] = _entry(lin[rank], gelu[rank])
        data[f"Distributed.all_reduce.{layer}.forward"] = _entry(gelu[rank], total)
        x = [total + 0.001 * r for r in range(ranks)]
    return data


def write_pair(root, ranks=64, steps=2, layers=8, fault_rank=37, fault_layer=3, factor=1.25):
    """Writes root/golden and root/target (step{s}/rank{r}/dump.json); returns (target, golden).
    `factor` scales the faulty gelu: with many ranks the all_reduce's mean dilutes it below the
    noise floor unless it is large."""
    root = pathlib.Path(root)
    for side, fault in (("golden", None), ("target", (fault_rank, fault_layer))):
        for step in range(steps):
            for rank in range(ranks):
                d = root / side / f"step{step}" / f"rank{rank}"
                d.mkdir(parents=True, exist_ok=True)
                doc = {"task": "statistics", "level": "L1", "framework": "pytorch",
                       "dump_data_dir": None,
                       "data": _rank_data(ranks, rank, step, layers, fault, factor)}
                (d / "dump.json").write_text(json.dumps(doc, indent=1))
    return root / "target", root / "golden"
