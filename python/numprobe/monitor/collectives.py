"""cc_distribution: statistics of the tensors of torch.distributed's collectives (msprobe's 16
wrapped ops), written as rows of the group ``other`` named "cc:<op>.<call>.<pre|post>_<i>" (the
vpp_stage column says "cc": msprobe's rows for collectives have no stage and shift its columns)."""
import re
import traceback

import torch
import torch.distributed as dist

from .groups import OTHER

DISTRIBUTED_OPS = [
    "send", "recv", "isend", "irecv", "batch_isend_irecv", "broadcast", "all_reduce", "reduce",
    "scatter", "reduce_scatter", "_reduce_scatter_base", "reduce_scatter_tensor", "all_gather",
    "gather", "_all_gather_base", "all_gather_into_tensor",
]

# Point-to-point calls that return before their transfer completes.
ASYNC_OPS = {"isend", "irecv", "batch_isend_irecv"}


def _arg_tensors(args):
    """The tensors of a collective's arguments: tensors, lists of tensors (stacked, as msprobe),
    batch_isend_irecv's P2POps."""
    out = []
    for a in args:
        if isinstance(a, torch.Tensor):
            out.append(a)
        elif isinstance(a, (list, tuple)) and a:
            if all(isinstance(x, torch.Tensor) for x in a):
                try:
                    out.append(torch.stack(list(a)))
                except RuntimeError:
                    out.extend(a)
            elif all(hasattr(x, "tensor") for x in a):
                out.extend(x.tensor for x in a)
    return out


class CollectiveHooks:
    def __init__(self, mon):
        self.mon = mon
        cc = mon.config["cc_distribution"]
        self.codeline = [re.compile(p) for p in cc["cc_codeline"]]
        self.pre = cc["cc_pre_hook"]
        self.log_only = cc["cc_log_only"]
        self.logged = {}
        self.calls = {}
        self.originals = {}

    def _stack(self):
        return ";".join(f"{f.filename}[{f.lineno}] {f.name}" for f in traceback.extract_stack()[:-2])

    def _wanted(self):
        if not self.codeline:
            return True
        stack = self._stack()
        return any(p.search(stack) for p in self.codeline)

    def _record(self, op, n, prefix, args):
        with torch.no_grad():
            for i, t in enumerate(_arg_tensors(args)):
                self.mon.collector.add(OTHER, f"cc:{op}.{n}.{prefix}_{i}", -1, t)

    def _wrap(self, op, fn):
        def wrapper(*args, **kwargs):
            mon = self.mon
            if self.log_only:
                self.logged.setdefault(op, set()).add(self._stack())
                return fn(*args, **kwargs)
            if mon.collector is None or not mon.collecting() or not self._wanted():
                return fn(*args, **kwargs)
            n = self.calls.get(op, 0)
            self.calls[op] = n + 1
            all_args = tuple(args) + tuple(kwargs.values())
            if self.pre:
                self._record(op, n, "pre", all_args)
            out = fn(*args, **kwargs)
            # An asynchronous call's outputs exist only once its work completes; waiting here
            # would remove the overlap the program asked for, so such calls get pre rows only.
            if not kwargs.get("async_op", False) and op not in ASYNC_OPS:
                self._record(op, n, "post", all_args)
            return out

        wrapper.__wrapped__ = fn
        return wrapper

    def install(self):
        for op in DISTRIBUTED_OPS:
            fn = getattr(dist, op, None)
            if fn is None or op in self.originals:
                continue
            self.originals[op] = fn
            setattr(dist, op, self._wrap(op, fn))

    def remove(self):
        for op, fn in self.originals.items():
            setattr(dist, op, fn)
        self.originals.clear()

    def before_step(self):
        """A new step numbers its calls from 0; cc_log_only prints the stacks after the first
        step and stops (msprobe)."""
        self.calls.clear()
        if self.log_only and self.mon.step > 0:
            lines = [f"{op}: {stack}" for op, stacks in self.logged.items() for stack in stacks]
            print("numprobe monitor: collectives used and their stacks:\n" + "\n".join(lines))
            raise RuntimeError("numprobe monitor: cc_log_only: exit after the first step (as msprobe)")
