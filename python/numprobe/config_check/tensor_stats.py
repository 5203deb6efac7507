"""Weights and data: max/min/mean/norm of every parameter (`weights/step{N}/rank{R}/weight.json`)
and of every tensor the model is called with (`dataset/step{N}/rank{R}/dataset.json`), taken
before each forward of the model. The compare (src/config_check/config_compare_stats.cc) wants them
equal and shows relative differences."""

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
