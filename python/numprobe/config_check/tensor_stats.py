"""Weights and data: max/min/mean/norm of every parameter (`weights/step{N}/rank{R}/weight.json`)
and of every tensor the model is called with (`dataset/step{N}/rank{R}/dataset.json`), taken
before each forward of the model. The compare wants them equal and shows relative differences."""
import math

WEIGHTS_HEADER = ["step", "rank", "weight_name", "equal", "max_relative_diff", "min_relative_diff",
                  "mean_relative_diff", "norm_relative_diff"]
DATASET_HEADER = ["step", "rank", "tag", "equal", "max_relative_diff", "min_relative_diff",
                  "mean_relative_diff", "norm_relative_diff"]
STATS = ("max", "min", "mean", "norm")
MAX_DEPTH = 64


def tensor_features(t):
    import torch
    t = t.detach()
    if t.is_complex():
        t = t.abs()
    t = t.float() if t.dtype != torch.float64 else t
    if t.numel() == 0:
        return {k: None for k in STATS}
    values = torch.stack([t.max(), t.min(), t.mean(), t.norm()]).tolist()  # one device sync
    return dict(zip(STATS, values))


def weights(model):
    return {name: tensor_features(p) for name, p in model.named_parameters()}


def inputs(args, kwargs):
    import torch

    def walk(obj, depth):
        if isinstance(obj, torch.Tensor):
            return tensor_features(obj)
        if depth >= MAX_DEPTH:
            return ""
        if isinstance(obj, (list, tuple)):
            return {str(i): walk(x, depth + 1) for i, x in enumerate(obj)}
        if isinstance(obj, dict):
            return {str(k): walk(v, depth + 1) for k, v in obj.items()}
        return ""

    return {"args": walk(list(args), 0), "kwargs": walk(dict(kwargs), 0)}


def _relative(b, c):
    if not isinstance(b, (int, float)) or not isinstance(c, (int, float)) or b == 0:
        return None
    if math.isnan(b) or math.isnan(c):
        return None
    return abs(b - c) / abs(b)


def _same(b, c):
    nan = isinstance(b, float) and isinstance(c, float) and math.isnan(b) and math.isnan(c)
    return b == c or nan  # NaN in both packs is the same statistic


def _stat_row(b, c):
    equal = all(_same(b.get(k), c.get(k)) for k in STATS)
    return [equal] + [_relative(b.get(k), c.get(k)) for k in STATS]


def _is_stats(value):
    return isinstance(value, dict) and set(value) == set(STATS)


def compare_weights(bench, cmp):
    rows = []
    for name in sorted(set(bench) | set(cmp)):
        if name not in cmp:
            rows.append([name, "only bench have", None, None, None, None])
        elif name not in bench:
            rows.append([name, "only cmp have", None, None, None, None])
        else:
            rows.append([name] + _stat_row(bench[name], cmp[name]))
    return rows


def compare_inputs(bench, cmp, tag="", depth=0):
    rows = []
    if depth > MAX_DEPTH:
        return rows
    for key in list(bench) + [k for k in cmp if k not in bench]:
        path = f"{tag}.{key}" if tag else str(key)
        if key not in cmp or key not in bench:
            rows.append([path, False, None, None, None, None])
            continue
        b, c = bench[key], cmp[key]
        if _is_stats(b) and _is_stats(c):
            rows.append([path] + _stat_row(b, c))
        elif isinstance(b, dict) and isinstance(c, dict):
            rows.extend(compare_inputs(b, c, path, depth + 1))
        elif b != c:
            rows.append([path, False, None, None, None, None])
    return rows
