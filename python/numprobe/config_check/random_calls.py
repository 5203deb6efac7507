"""Random API calls: apply_patches() wraps the random functions of `random`, numpy and torch so each
call is counted per (API, call stack). Seeding calls also keep the seed values they were given, so
a changed seed is reported even where the stacks agree. The compare pairs stacks across runs by file
name, function and code line (paths may differ between machines)."""
import difflib
import functools
import linecache
import os
import sys
import threading

HEADER = ["op", "rank", "bench_stack", "cmp_stack", "bench_count", "cmp_count", "check_result"]
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


def _parse_frame(frame):
    # "File {path}, line {n}, in {func}, {code}"
    head, _, rest = frame.partition(", line ")
    _, _, after = rest.partition(", in ")
    func, _, code = after.partition(", ")
    return os.path.basename(head[5:]), func, code


def stacks_match(a, b, threshold=0.8):
    if len(a) != len(b):
        return False
    for fa, fb in zip(a, b):
        pa, pb = _parse_frame(fa), _parse_frame(fb)
        score = (float(pa[0] == pb[0]) + float(pa[1] == pb[1])
                 + difflib.SequenceMatcher(None, pa[2], pb[2]).ratio()) / 3
        if score < threshold:
            return False
    return True


def _same_calls(b, c):
    return b.get("count") == c.get("count") and b.get("seeds") == c.get("seeds")


def compare(bench_ranks, cmp_ranks):
    """bench_ranks/cmp_ranks: {rank: {api: [entries]}}. A row per stack; check_result False when a
    stack has no partner, the counts differ or a seeding call got other seeds."""
    rows = []
    for rank in sorted(set(bench_ranks) | set(cmp_ranks)):
        bench, cmp = bench_ranks.get(rank, {}), cmp_ranks.get(rank, {})
        for api in sorted(set(bench) | set(cmp)):
            free = list(cmp.get(api, []))
            for b in bench.get(api, []):
                c = next((c for c in free if stacks_match(b["stack"], c["stack"])), None)
                b_count = _count_text(b)
                if c is None:
                    rows.append([api, rank, "\n".join(b["stack"]), "no match stack", b_count, "0",
                                 False])
                    continue
                free.remove(c)
                rows.append([api, rank, "\n".join(b["stack"]), "\n".join(c["stack"]), b_count,
                             _count_text(c), _same_calls(b, c)])
            for c in free:
                rows.append([api, rank, "no match stack", "\n".join(c["stack"]), "0",
                             _count_text(c), False])
    return sorted(rows, key=lambda r: (r[6] is not False, r[1], r[0]))


def _count_text(entry):
    seeds = entry.get("seeds")
    return f"{entry.get('count', 0)} (seeds {', '.join(seeds)})" if seeds else str(entry.get("count", 0))
