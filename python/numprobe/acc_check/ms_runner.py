"""Replays one API of a MindSpore dump on MindSpore (no torch): the device run with the recorded
dtypes, the reference with floating inputs (and dtype arguments) widened to float64 on MindSpore's
CPU, and msprobe's metrics of each output from numprobe's acc-check engine (numprobe._engine).
`Mint.x` is `mindspore.mint.x`, `MintFunctional.x` `mindspore.mint.nn.functional.x`,
`Functional.x` `mindspore.ops.x`, `Tensor.x` the method of `mindspore.Tensor`.
"""
import os

import numpy as np
import mindspore as ms
from mindspore import mint, ops

from numprobe import _engine
from .ms_inputs import Dtype, InputBuilder, Tensor
from .replay_common import ERROR, PASS, SKIP, Outcome, ReplayInputError
from .replay_common import skipped as _skipped

FLOATS = {"Float64", "Float32", "Float16", "BFloat16"}
MS_DTYPES = {"Float64": ms.float64, "Float32": ms.float32, "Float16": ms.float16,
             "BFloat16": ms.bfloat16, "Int64": ms.int64, "Int32": ms.int32, "Int16": ms.int16,
             "Int8": ms.int8, "UInt8": ms.uint8, "Bool": ms.bool_}
# The torch dtype name numprobe's acc-check engine chooses thresholds by.
ENGINE_KIND = {"Float64": "torch.float64", "Float32": "torch.float32",
               "Float16": "torch.float16", "BFloat16": "torch.bfloat16", "Int64": "torch.int64",
               "Int32": "torch.int32", "Int16": "torch.int16", "Int8": "torch.int8",
               "UInt8": "torch.uint8", "Bool": "torch.bool"}


class Skip(Exception):
    """The API is not replayed; the message says why."""


def skipped(message):
    return _skipped(message, _engine)


def resolve(case):
    spaces = {"Mint": mint, "MintFunctional": mint.nn.functional, "Functional": ops,
              "Tensor": ms.Tensor}
    if case.api_type == "Primitive":
        raise Skip("primitive: its construction arguments (LayerNorm's epsilon, ...) are not "
                   "recorded, not replayed")
    if case.api_type not in spaces:
        raise Skip(f"{case.api_type} APIs are not replayed on MindSpore")
    f = getattr(spaces[case.api_type], case.op, None)
    if not callable(f):
        raise Skip(f"MindSpore {ms.__version__} has no {case.api_type}.{case.op}")
    return f


def materialise(value, wide):
    """Rebuilt arguments as MindSpore values; `wide`: floating tensors and dtypes as float64."""
    if isinstance(value, Tensor):
        dtype = "Float64" if wide and value.dtype in FLOATS else value.dtype
        return ms.Tensor(value.array, dtype=MS_DTYPES[dtype])
    if isinstance(value, Dtype):
        return MS_DTYPES["Float64" if wide and value.name in FLOATS else value.name]
    if isinstance(value, list):
        return [materialise(v, wide) for v in value]
    if isinstance(value, dict):
        return {k: materialise(v, wide) for k, v in value.items()}
    return value


def flatten(out):
    """Outputs in order: (numpy array, MindSpore dtype name) or a plain value."""
    if isinstance(out, (tuple, list)):
        return [x for o in out for x in flatten(o)]
    if isinstance(out, ms.Tensor):
        name = str(out.dtype)
        arr = (out.astype(ms.float32) if name == "BFloat16" else out).asnumpy()
        return [(arr, name)]
    return [out]


def as_engine_array(arr, dtype):
    keep = np.float32 if dtype in ("Float32", "Float16", "BFloat16") else np.float64
    return np.ascontiguousarray(arr, dtype=keep)


# A gradient whose float64 reference is below the float32 rounding of summing the incoming
# gradient into it vanishes in exact arithmetic (the bias of attention's key projection: softmax
# ignores a shift along a row); both runs hold rounding noise there, not judged. The bound:
# 2^-19 of ||dY||_1 / N for a gradient of N elements, float32's 2^-23 with a margin of 16 for the
# rounding the recorded dY itself carries from the float32 computations that produced it (the
# float64 sum of a float32-rounded dY that is zero in exact arithmetic is not zero).
VANISHING = 2.0 ** -19
VANISHING_MESSAGE = ("The float64 reference is below float32 resolution of the incoming gradient "
                     "(it vanishes in exact arithmetic): not judged.")


def compare_outputs(op, bench, device, incoming_l1=None):
    if len(bench) != len(device):
        return ERROR, [_engine.acc_unusable(ERROR, "bench and npu output structure is different.")]
    cols = []
    for b, d in zip(bench, device):
        if isinstance(b, tuple) and isinstance(d, tuple) and incoming_l1 is not None and \
                b[0].size and float(np.max(np.abs(b[0]))) < VANISHING * incoming_l1 / b[0].size:
            cols.append(_engine.acc_unusable(SKIP, VANISHING_MESSAGE))
        elif isinstance(b, tuple) and isinstance(d, tuple):
            (ba, bn), (da, dn) = b, d
            cols.append(_engine.acc_compare(
                op, as_engine_array(ba, bn), as_engine_array(da, dn),
                "torch.float64" if bn in FLOATS else ENGINE_KIND.get(bn, "torch.float64"),
                ENGINE_KIND.get(dn, "torch.float64"), bn, dn))
        elif b is None:
            cols.append(_engine.acc_unusable(SKIP, "Bench output is None, skip this test."))
        elif isinstance(b, tuple) != isinstance(d, tuple):
            cols.append(_engine.acc_unusable(ERROR, "bench and npu output type is different."))
        else:
            cols.append(_engine.acc_unusable(PASS if b == d else ERROR, ""))
    status = PASS
    for c in cols:
        if c.status != SKIP:
            status = _engine.acc_worse(status, c.status)
    return status, cols


def run_case(case, opts):
    try:
        f = resolve(case)
    except Skip as e:
        return skipped(str(e))
    builder = InputBuilder(case.name, opts.seed, opts.real_data, opts.data_dirs)
    try:
        args = builder.value(case.forward.get("input_args") or [])
        kwargs = builder.value(case.forward.get("input_kwargs") or {})
    except ReplayInputError as e:
        return skipped(f"inputs: {e}")
    if opts.offline:
        try:
            device = [(builder.load(leaf, leaf.get("shape")), leaf.get("dtype"))
                      if isinstance(leaf, dict) and leaf.get("type") in ("mindspore.Tensor",)
                      else (leaf.get("value") if isinstance(leaf, dict) else leaf)
                      for leaf in _leaves(case.forward.get("output"))]
        except ReplayInputError as e:
            return skipped(f"recorded outputs: {e}")
    else:
        try:
            device = flatten(f(*materialise(args, False), **materialise(kwargs, False)))
        except Exception as e:  # noqa: BLE001 - the API's own error is the finding
            return skipped(f"device run raised {type(e).__name__}: {str(e).splitlines()[0]}")
    try:
        bench = flatten(f(*materialise(args, True), **materialise(kwargs, True)))
    except Exception as e:  # noqa: BLE001
        return skipped("no float64 reference on MindSpore's CPU: "
                       f"{type(e).__name__}: {str(e).splitlines()[0]}")
    status, cols = compare_outputs(case.op, bench, device)
    bwd_status, bwd_cols, bwd_message = " ", [], ""
    if case.backward is not None:
        try:
            bwd_status, bwd_cols = run_backward(f, args, kwargs, case, builder, opts)
        except Skip as e:
            bwd_status, bwd_message = SKIP, str(e)
            bwd_cols = [_engine.acc_unusable(SKIP, bwd_message)]
        except Exception as e:  # noqa: BLE001 - a backward failure leaves the forward verdict
            bwd_status, bwd_message = SKIP, f"backward: {type(e).__name__}: {str(e).splitlines()[0]}"
            bwd_cols = [_engine.acc_unusable(SKIP, bwd_message)]
    arrays = {}
    if status == ERROR:
        arrays = {f"input.{i}": a.array for i, a in enumerate(args) if isinstance(a, Tensor)}
        arrays.update({f"output.{i}.bench": b[0] for i, b in enumerate(bench) if isinstance(b, tuple)})
        arrays.update({f"output.{i}.device": d[0] for i, d in enumerate(device)
                       if isinstance(d, tuple)})
    return Outcome(status, bwd_status, cols, bwd_cols, bwd_message, arrays)


def run_backward(f, args, kwargs, case, builder, opts):
    """The gradients of the floating tensor arguments (positional) for the recorded output
    gradients (the backward entry's `input`), by `mindspore.vjp`, in the recorded dtypes and in
    float64; with --offline the device side is the backward entry's recorded `output`."""
    tensors = [i for i, a in enumerate(args) if isinstance(a, Tensor)]
    idx = [i for i in tensors if args[i].dtype in FLOATS]
    if not idx:
        raise Skip("backward: no floating tensor argument to differentiate")
    try:
        cot = builder.value(case.backward.get("input") or [])
    except ReplayInputError as e:
        raise Skip(f"backward inputs: {e}") from None

    def grads(wide):
        call = materialise(args, wide)
        kw = materialise(kwargs, wide)

        def fn(*xs):
            c = list(call)
            for i, x in zip(idx, xs):
                c[i] = x
            return f(*c, **kw)

        out, vjp_fn = ms.vjp(fn, *[call[i] for i in idx])
        outs = out if isinstance(out, tuple) else (out,)
        cots = materialise(cot, wide)
        if len(cots) != len(outs):
            raise Skip(f"backward: {len(cots)} recorded output gradients for {len(outs)} outputs")
        cots = tuple(ops.zeros_like(o) if c is None else c.astype(o.dtype)
                     for c, o in zip(cots, outs))
        g = vjp_fn(cots if isinstance(out, tuple) else cots[0])
        return flatten(g if isinstance(g, tuple) else (g,))

    bench = grads(True)
    if opts.offline:
        recorded = case.backward.get("output") or []
        if len(recorded) != len(tensors):
            raise Skip(f"backward: {len(recorded)} recorded input gradients for "
                       f"{len(tensors)} tensor arguments")
        device = []
        for k, i in enumerate(tensors):
            leaf = recorded[k]
            if i in idx:
                device.append((builder.load(leaf, leaf.get("shape")), leaf.get("dtype"))
                              if isinstance(leaf, dict) else None)
    else:
        device = grads(False)
    l1 = sum(float(np.sum(np.abs(c.array), dtype=np.float64)) for c in cot
             if isinstance(c, Tensor) and c.dtype in FLOATS)
    return compare_outputs(case.op, bench, device, l1)


def _leaves(out):
    if isinstance(out, list):
        return [x for o in out for x in _leaves(o)]
    return [out]


def save_error_data(directory, api, arrays):
    os.makedirs(directory, exist_ok=True)
    for key, arr in arrays.items():
        np.save(os.path.join(directory, f"{api}.{key}.npy"), arr)
