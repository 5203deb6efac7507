"""acc-check --repro: a standalone script (torch only) that replays one API."""
import os

import torch

from .inputs import InputBuilder

_TEMPLATE = '''"""Replays {name} as numprobe acc-check did: the device run against a float64 CPU reference.
Written by `numprobe acc-check --repro {name}`; needs only torch. Inputs are in {data}."""
import torch

DEVICE = "{device}"
torch.backends.cudnn.allow_tf32 = torch.backends.cuda.matmul.allow_tf32 = {tf32}
torch.backends.cudnn.deterministic = True
UPCAST = {{torch.float16: torch.float32, torch.bfloat16: torch.float32, torch.float32: torch.float64}}
saved = torch.load("{data}")
api = {call}


def move(obj, fn):
    if isinstance(obj, torch.Tensor):
        return fn(obj)
    if isinstance(obj, (list, tuple)) and not isinstance(obj, torch.Size):
        return type(obj)(move(x, fn) for x in obj)
    if isinstance(obj, dict):
        return {{k: move(v, fn) for k, v in obj.items()}}
    return UPCAST.get(obj, obj) if isinstance(obj, torch.dtype) and fn is reference else obj


def reference(t):
    return t.detach().to("cpu", UPCAST.get(t.dtype, t.dtype))


device_out = api(*move(saved["args"], lambda t: t.to(DEVICE)),
                 **move(saved["kwargs"], lambda t: t.to(DEVICE)))
bench_out = api(*move(saved["args"], reference), **move(saved["kwargs"], reference))
outs = device_out if isinstance(device_out, (list, tuple)) else [device_out]
refs = bench_out if isinstance(bench_out, (list, tuple)) else [bench_out]
for i, (d, b) in enumerate(zip(outs, refs)):
    if not isinstance(d, torch.Tensor) or not d.is_floating_point():
        print(f"output {{i}}: {{d!r}} vs {{b!r}}")
        continue
    err = (d.cpu().double() - b.double()).abs()
    rel = err / (b.double().abs() + torch.finfo(b.dtype).eps)
    print(f"output {{i}}: {{d.dtype}} {{tuple(d.shape)}} max abs err {{err.max().item():.3e}}, "
          f"max rel err {{rel.max().item():.3e}}, rel L2 err "
          f"{{(err.norm() / b.double().norm().clamp_min(1e-300)).item():.3e}}")
'''


def _call_expression(case):
    t, op = case.api_type, case.op
    if t == "Aten":
        name, _, overload = op.partition(".")
        return f"getattr(torch.ops.aten.{name}, {overload or 'default'!r})"
    if t == "Tensor":
        return f"getattr(torch.Tensor, {op!r})"
    if t in ("Functional", "MintFunctional") and hasattr(torch.nn.functional, op):
        return f"torch.nn.functional.{op}"
    return f"getattr(torch, {op!r})"


def write_repro(case, opts, out_dir):
    builder = InputBuilder(case.name, opts.seed, opts.real_data or opts.offline,
                           [case.data_dir] + list(opts.data_dirs))
    args = builder.value(case.forward.get("input_args") or [], False)
    kwargs = {k: builder.value(v, False) for k, v in (case.forward.get("input_kwargs") or {}).items()}
    kwargs.pop("device", None)
    data = os.path.join(out_dir, f"repro_{case.name}.pt")
    torch.save({"args": args, "kwargs": kwargs}, data)
    script = os.path.join(out_dir, f"repro_{case.name}.py")
    with open(script, "w", encoding="utf-8") as f:
        f.write(_TEMPLATE.format(name=case.name, data=os.path.abspath(data), device=opts.device,
                                 tf32=bool(torch.backends.cudnn.allow_tf32),
                                 call=_call_expression(case)))
    return script
