"""Random API calls: apply_patches() wraps the random functions of `random`, numpy and torch so each
call is counted per (API, call stack). Seeding calls also keep the seed values they were given, so
a changed seed is reported even where the stacks agree. The compare
(src/config_check/config_compare_random.cc) pairs stacks across runs by file name, function and code
line (paths may differ between machines)."""
import functools
import linecache
import os
import sys
import threading

SEEDING = {"random.seed", "np.random.seed", "torch.manual_seed", "torch.cuda.manual_seed",
           "torch.cuda.manual_seed_all", "torch.seed"}
MAX_STACK = 64

_records = {}  # api -> {tuple(stack): {"count": n, "stack": [...], "seeds": [...]}}
_lock = threading.Lock()
_patched = set()
_inside = threading.local()


def _stack(frame):
    frames = []
    while frame is not None and len(frames) < MAX_STACK:
        code = frame.f_code

        line = linecache.getline(code.co_filename, frame.f_lineno).strip()
        frames.append(f"File {os.path.abspath(code.co_filename)}, line {frame.f_lineno}, "
                      f"in {code.co_name}, {line}")
        frame = frame.f_back
    return frames[::-1]


def _track(func, api):
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        if getattr(_inside, "busy", False):  # a patched API calling another: count the outer one
            return func(*args, **kwargs)
        _inside.busy = True
        try:
            stack = _stack(sys._getframe(1))
            with _lock:
                entry = _records.setdefault(api, {}).setdefault(
                    tuple(stack), {"count": 0, "stack": stack})
                entry["count"] += 1
                if api in SEEDING:
                    entry.setdefault("seeds", []).append(repr(args[0]) if args else "")
            return func(*args, **kwargs)
        finally:
            _inside.busy = False
    wrapper.__numprobe_tracked__ = True
    return wrapper


def _patch(owner, owner_name, names):
    for name in names:
        func = getattr(owner, name, None)
        if func is None or getattr(func, "__numprobe_tracked__", False):
            continue
        setattr(owner, name, _track(func, f"{owner_name}.{name}"))
        _patched.add(f"{owner_name}.{name}")


def apply_patches(framework="pytorch"):
    import random
    _patch(random, "random", ("seed", "random", "randint", "randrange", "uniform", "choice",
                              "choices", "shuffle", "sample", "gauss", "normalvariate"))
    try:
        import numpy as np
        _patch(np.random, "np.random", ("seed", "rand", "randn", "randint", "random", "choice",
                                        "normal", "uniform", "shuffle", "permutation"))
    except ImportError:
        pass
    if framework == "pytorch":
        import torch
        _patch(torch, "torch", ("manual_seed", "seed", "rand", "randn", "randint", "randperm",
                                "rand_like", "randn_like", "randint_like", "normal", "bernoulli",
                                "multinomial", "poisson"))
        _patch(torch.cuda, "torch.cuda", ("manual_seed", "manual_seed_all"))
        _patch(torch.Tensor, "torch.Tensor", ("uniform_", "normal_", "random_", "bernoulli_",
                                              "exponential_", "geometric_", "log_normal_",
                                              "cauchy_"))


def snapshot():
    """The `random/rank{R}.json` content: {api: [{count, stack[, seeds]}]}."""
    with _lock:
        return {api: [dict(e) for e in entries.values()] for api, entries in sorted(_records.items())}
