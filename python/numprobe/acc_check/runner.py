"""Replays one API on the device under test and on the CPU reference and compares the two."""
import os

import torch

from numprobe import _C
from .inputs import InputBuilder
from .replay_common import ERROR, PASS, SKIP, Outcome, skipped as _skipped


def skipped(message):
    return _skipped(message, _C)


# ---- finding the callable ----------------------------------------------------------------------
def resolve(case, mindspore):
    """The Python callable (args, kwargs) -> output for an L1 API, or an aten call."""
    t, op = case.api_type, case.op
    if mindspore or t.startswith("Mint"):
        # The built-in MindSpore -> PyTorch API table that compare's -am uses (mindspore.mint
        # mirrors torch; mindspore.ops and Tensor methods are renamed where they differ).
        mapped = _C.builtin_pt_api(f"{t}.{op}")
        if mapped:
            t, _, op = mapped.partition(".")
    if t == "Aten":
        name, _, overload = op.partition(".")
        return lambda args, kwargs: _C.acc_call_aten(name, overload or "default", tuple(args),
                                                     dict(kwargs))
    if t == "Tensor":
        f = getattr(torch.Tensor, op, None)
    elif t in ("Torch", "Mint"):
        f = getattr(torch, op, None) or getattr(torch._C._VariableFunctions, op, None)
    elif t in ("Functional", "MintFunctional"):
        f = getattr(torch.nn.functional, op, None)
        if f is None and (mindspore or t == "MintFunctional"):
            f = getattr(torch, op, None)  # mindspore.ops functional names that torch keeps in torch.*
    elif t == "VF":
        f = getattr(torch._VF, op, None)
    else:
        f = None
    if f is None or not callable(f):
        where = "a PyTorch equivalent" if mindspore else "this API in torch " + torch.__version__
        raise LookupError(f"{case.name}: cannot find {where}")
    return lambda args, kwargs: f(*args, **kwargs)


# ---- moving arguments between device and reference ---------------------------------------------
def _map(obj, fn):
    if isinstance(obj, torch.Tensor):
        return fn(obj)
    if isinstance(obj, (list, tuple)) and not isinstance(obj, torch.Size):
        return type(obj)(_map(x, fn) for x in obj) if isinstance(obj, tuple) else \
            [_map(x, fn) for x in obj]
    if isinstance(obj, dict):
        return {k: _map(v, fn) for k, v in obj.items()}
    return obj


_UPCAST = {torch.float16: torch.float32, torch.bfloat16: torch.float32,
           torch.float32: torch.float64}


class _Copier:
    """Copies input tensors for one side (device or reference). A tensor that needs a gradient
    becomes a leaf (kept in .leaves, where its .grad lands) and the API gets leaf.clone(), so
    in-place APIs and inplace=True calls work on it as they did in training."""

    def __init__(self, device, widen):
        self.device, self.widen, self.leaves = device, widen, []

    def __call__(self, t):
        dtype = _UPCAST.get(t.dtype, t.dtype) if self.widen else t.dtype
        c = t.detach().to(self.device, dtype, copy=True)  # one copy, widened or not
        if not t.requires_grad:
            return c
        c.requires_grad_(True)
        self.leaves.append(c)
        return c.clone()


def _reference_copy(t):
    dtype = _UPCAST.get(t.dtype, t.dtype)
    return t.detach().to("cpu", dtype, copy=True)


def _reference_kwargs(kwargs):
    # A dtype= argument names the computing precision: the reference widens it too.
    out = {}
    for k, v in kwargs.items():
        out[k] = _UPCAST.get(v, v) if isinstance(v, torch.dtype) else v
    return out


def _leaves(obj, out):
    if isinstance(obj, (list, tuple)) and not isinstance(obj, torch.Size):
        for x in obj:
            _leaves(x, out)
    elif isinstance(obj, dict):
        for x in obj.values():
            _leaves(x, out)
    else:
        out.append(obj)
    return out


# ---- comparing -----------------------------------------------------------------------------------
def compare_outputs(op, bench, device):
    b, d = _leaves(bench, []), _leaves(device, [])
    if len(b) > len(d):
        return ERROR, [_C.acc_unusable(ERROR, "bench and npu output structure is different.")]
    cols = []
    for x, y in zip(b, d[:len(b)]):
        if isinstance(x, torch.Tensor) and isinstance(y, torch.Tensor):
            cols.append(_C.acc_compare(op, x.detach(), y.detach()))
        elif x is None:
            cols.append(_C.acc_unusable(SKIP, "Bench output is None, skip this test."))
        elif isinstance(x, torch.Tensor) or isinstance(y, torch.Tensor):
            cols.append(_C.acc_unusable(ERROR, "bench and npu output type is different."))
        elif isinstance(x, (bool, int, float, str)):
            cols.append(_C.acc_unusable(PASS if x == y else ERROR, ""))
        else:
            cols.append(_C.acc_unusable(PASS, f"Unexpected output type: {type(x).__name__}"))
    return overall(cols), cols


def overall(cols):
    statuses = [c.status for c in cols]
    if not statuses or all(s == SKIP for s in statuses):
        return SKIP
    worst = PASS
    for s in statuses:
        worst = _C.acc_worse(worst, s)
    return worst


# ---- one API -----------------------------------------------------------------------------------
def run_case(case, opts, mindspore=False):
    fwd = case.forward
    data_dirs = [case.data_dir] + list(opts.data_dirs)
    builder = InputBuilder(case.name, opts.seed, opts.real_data or opts.offline, data_dirs)
    kwargs_info = fwd.get("input_kwargs") or {}
    want_grad = case.backward is not None and "out" not in kwargs_info
    args = builder.value(fwd.get("input_args") or [], want_grad)
    kwargs = {k: builder.value(v, want_grad) for k, v in kwargs_info.items()}
    kwargs.pop("device", None)
    call = resolve(case, mindspore)

    bench_copy = _Copier("cpu", True)
    bench_args = _map(args, bench_copy)
    bench_kwargs = _reference_kwargs(_map(kwargs, bench_copy))
    bench_out = call(bench_args, bench_kwargs)
    tensors = {"forward.input": [args, kwargs], "forward.output.bench": bench_out}
    if opts.offline:
        recorded = builder.value(fwd.get("output"), False)
        device_out = recorded[0] if isinstance(recorded, list) and len(recorded) == 1 and \
            not isinstance(bench_out, (list, tuple)) else recorded
        dev_copy = None
    else:
        dev_copy = _Copier(opts.device, False)
        device_out = call(_map(args, dev_copy), _map(kwargs, dev_copy))
    tensors["forward.output.device"] = device_out
    fwd_status, fwd_cols = compare_outputs(case.op, bench_out, _map(device_out, lambda t: t.cpu()))

    bwd_status, bwd_cols, message = " ", [], ""
    if case.backward is not None:
        if not want_grad:
            message = "backward not replayed: out= call."
        else:
            try:
                bwd_status, bwd_cols, message = _backward(case, builder, opts, bench_out,
                                                          bench_copy, device_out, dev_copy, tensors)
            except Exception as e:  # the forward verdict stands; the backward one is a SKIP
                message = f"backward: {type(e).__name__}: {e}"
                bwd_status, bwd_cols = SKIP, [_C.acc_unusable(SKIP, message)]
    return Outcome(fwd_status, bwd_status, fwd_cols, bwd_cols, message, tensors)


def _backward(case, builder, opts, bench_out, bench_copy, device_out, dev_copy, tensors):
    grads = builder.value(case.backward.get("input") or [], False)
    bench_outs = [t for t in _leaves(bench_out, []) if isinstance(t, torch.Tensor)]
    pairs = [(o, g) for o, g in zip(bench_outs, grads)
             if isinstance(g, torch.Tensor) and o.requires_grad]
    if not pairs:
        return " ", [], "backward not replayed: no output needs a gradient."
    torch.autograd.backward([o for o, _ in pairs], [_reference_copy(g) for _, g in pairs])
    bench_grads = [t.grad for t in bench_copy.leaves]
    if opts.offline:
        recorded = _leaves(builder.value(case.backward.get("output") or [], False), [])
        bench_grads, device_grads, unpaired = _pair_recorded_grads(bench_out, bench_copy.leaves,
                                                                   bench_grads, recorded)
        tensors["backward.input"] = grads
        tensors["backward.output.bench"] = bench_grads
        tensors["backward.output.device"] = device_grads
        cols = []
        if bench_grads:
            _, cols = compare_outputs(case.op, bench_grads, device_grads)
        message = ""
        if unpaired:
            message = "backward: " + "; ".join(unpaired) + " (not compared)"
            cols = cols + [_C.acc_unusable(SKIP, message)]
        return overall(cols), cols, message
    else:
        dev_outs = [t for t in _leaves(device_out, []) if isinstance(t, torch.Tensor)]
        dpairs = [(o, g) for o, g in zip(dev_outs, grads)
                  if isinstance(g, torch.Tensor) and o.requires_grad]
        torch.autograd.backward([o for o, _ in dpairs],
                                [g.to(o.device, o.dtype) for o, g in dpairs])
        device_grads = [t.grad for t in dev_copy.leaves]
    tensors["backward.input"] = grads
    tensors["backward.output.bench"] = bench_grads
    tensors["backward.output.device"] = device_grads
    status, cols = compare_outputs(case.op, bench_grads, _map(device_grads, lambda t: t.cpu()))
    return status, cols, ""


def _leaf_of(fn, leaves):
    """The replay's input leaf that autograd node fn accumulates into, through the clone the copier
    puts between a leaf and the API; None when fn is an inner node of the API (or nothing)."""
    while fn is not None and fn.name().startswith("CloneBackward"):
        fn = fn.next_functions[0][0]
    variable = getattr(fn, "variable", None)  # AccumulateGrad nodes hold their leaf
    return next((k for k, leaf in enumerate(leaves) if leaf is variable), None)


def _pair_recorded_grads(bench_out, leaves, replayed, recorded):
    """Pairs the gradients a dump recorded for an API's backward with those the replay computed.

    msprobe and numprobe record, for an API's backward, the gradients its output's autograd node
    hands to each of that node's inputs, in the node's order (None where an input takes none). For
    an API made of one node (gelu, softmax) those are the API's input gradients; for a composite
    (linear's view of an addmm, cross_entropy's nll_loss over log_softmax) some go to inner nodes.
    The replay builds the same node, so recorded gradient i belongs to the node's input i: it is
    compared with the replayed gradient of the input leaf that input leads to, and where it leads
    to an inner node instead, it is not compared (said in the Message, never an error).
    Returns (replayed gradients, recorded gradients) paired in order, and a note per unpaired one.
    """
    outs = [t for t in _leaves(bench_out, []) if isinstance(t, torch.Tensor) and t.grad_fn is not None]
    if not outs:
        return [], [], ["the replayed output has no autograd node to pair recorded gradients with"]
    node = outs[0].grad_fn  # the output the capture attached the backward entry to
    inputs = node.next_functions
    if len(recorded) != len(inputs):
        return [], [], [f"{len(recorded)} recorded gradients for {node.name()}, whose replay has "
                        f"{len(inputs)} inputs"]
    bench, device, unpaired = [], [], []
    for i, (r, (fn, _)) in enumerate(zip(recorded, inputs)):
        if not isinstance(r, torch.Tensor):
            continue
        k = _leaf_of(fn, leaves)
        if k is None or not isinstance(replayed[k], torch.Tensor):
            into = fn.name() if fn is not None else "nothing"
            unpaired.append(f"recorded gradient {i} {list(r.shape)} goes to {into}, inside the API, "
                            "not to one of its inputs")
            continue
        bench.append(replayed[k])
        device.append(r.cpu())
    return bench, device, unpaired


def save_error_data(out_dir, api, tensors):
    """msprobe's -save_error_data: the inputs and both outputs of a failing API as .npy."""
    os.makedirs(out_dir, exist_ok=True)
    import numpy as np
    for tag, obj in tensors.items():
        for i, t in enumerate(x for x in _leaves(obj, []) if isinstance(x, torch.Tensor)):
            t = t.detach().cpu()
            if t.dtype == torch.bfloat16:
                t = t.float()
            np.save(os.path.join(out_dir, f"{api}.{tag}.{i}.npy"), t.numpy())


__all__ = ["Options", "Outcome", "run_case", "skipped", "save_error_data", "worst"]
