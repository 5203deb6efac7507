"""Which APIs a dump holds and how each will be replayed (or why not)."""
import json
import os
import re
from dataclasses import dataclass
from typing import Optional

from .. import _engine

# msprobe's and numprobe's API prefixes -> where the callable lives.
L1_PREFIXES = {"Torch", "Functional", "Tensor", "Aten", "Mint", "MintFunctional", "NPU",
               "Distributed", "Jit", "VF", "Primitive"}
COMMUNICATION = {"Distributed"}

RANDOM_APIS = {
    "dropout", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout", "feature_alpha_dropout",
    "native_dropout", "rand", "rand_like", "randn", "randn_like", "randint", "randint_like",
    "randperm", "bernoulli", "bernoulli_", "multinomial", "normal", "normal_", "uniform_",
    "exponential_", "geometric_", "log_normal_", "cauchy_", "random_", "rrelu", "rrelu_",
    "gumbel_softmax", "poisson"}
# Factories whose values are uninitialised memory; the deterministic ones (zeros, arange, ...)
# are replayed like any API.
FACTORY_APIS = {"empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided",
                "empty_with_format"}
MUTATING_APIS = {
    "__setitem__", "copy_", "set_", "resize_", "resize_as_", "backward", "register_hook",
    "retain_grad", "requires_grad_", "item", "tolist", "numpy", "data_ptr", "storage",
    "untyped_storage", "record_stream", "cuda", "npu", "pin_memory", "share_memory_",
    "__bool__", "__len__", "__format__", "__repr__", "__iter__", "zero_", "fill_", "detach_"}

_KEY = re.compile(r"^(?P<api>.+)\.(?P<direction>forward|backward)$")


@dataclass
class ApiCase:
    name: str                 # "Functional.gelu.0" (msprobe's API name column)
    api_type: str             # "Functional"
    op: str                   # "gelu"; aten: "addmm.default"
    forward: dict
    backward: Optional[dict] = None
    skip_reason: Optional[str] = None
    data_dir: Optional[str] = None  # dump_tensor_data of a tensor dump


def _split(api: str):
    """'Functional.gelu.0' -> ('Functional', 'gelu'); 'Aten.addmm.default.3' -> ('Aten',
    'addmm.default'); 'Tensor.__mul__.7' -> ('Tensor', '__mul__')."""
    parts = api.split(".")
    if len(parts) < 3 or not parts[-1].isdigit():
        return None, None
    return parts[0], ".".join(parts[1:-1])


def resolve_api_info(path: str) -> str:
    """The dump.json that -api_info names: the file itself, or the one dump.json under a rank
    directory, a step directory or a dump root, found by the engine as compare and info find it
    (numprobe._engine.find_rank_dumps). acc-check checks one process's APIs: a directory holding
    several rank dumps is an error that lists them."""
    if not os.path.isdir(path):
        return path
    try:
        found = [d["dump_json"] for d in _engine.find_rank_dumps(path) if d["has_dump_json"]]
    except _engine.NumprobeError:
        found = []  # the directory holds no dump (a dump.journal alone is not replayable either)
    if not found:
        raise ValueError(f"{path}: a directory with no dump.json in it, its rank or its step "
                         "directories")
    if len(found) > 1:
        shown = ", ".join(os.path.relpath(f, path) for f in found[:4])
        more = f" and {len(found) - 4} more" if len(found) > 4 else ""
        raise ValueError(f"{path}: holds {len(found)} rank dumps ({shown}{more}); acc-check checks "
                         "one: name its dump.json or rank directory")
    return found[0]


def load_api_info(path: str):
    """dump.json (msprobe or numprobe, with its "data") or msprobe's bare forward.json."""
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except FileNotFoundError:
        raise ValueError(f"{path}: no such file") from None
    except OSError as e:
        raise ValueError(f"{path}: cannot read: {e.strerror or e}") from None
    except UnicodeDecodeError as e:
        raise ValueError(f"{path}: not UTF-8 text (byte {e.start}): not a dump.json") from None
    except json.JSONDecodeError as e:
        raise ValueError(f"{path}: not valid JSON (line {e.lineno}, column {e.colno}: {e.msg})") \
            from None
    if not isinstance(doc, dict):
        raise ValueError(f"{path}: expected a JSON object of API entries")
    data = doc.get("data", doc)
    if not isinstance(data, dict):
        raise ValueError(f"{path}: \"data\" must be an object of API entries")
    task = doc.get("task")
    data_dir = None
    root = os.path.dirname(os.path.abspath(path))
    if doc.get("dump_data_dir"):
        data_dir = doc["dump_data_dir"]
    elif os.path.isdir(os.path.join(root, "dump_tensor_data")):
        data_dir = os.path.join(root, "dump_tensor_data")
    return data, task, data_dir


def build_plan(path: str, filters=None):
    data, task, data_dir = load_api_info(path)
    backward = {}
    for key, entry in data.items():
        m = _KEY.match(key)
        if m and m.group("direction") == "backward" and isinstance(entry, dict):
            backward[m.group("api")] = entry
    cases = []
    for key, entry in data.items():
        m = _KEY.match(key)
        if not m or m.group("direction") != "forward" or not isinstance(entry, dict):
            continue
        api = m.group("api")
        if filters and not any(re.search(f, api) for f in filters):
            continue
        api_type, op = _split(api)
        case = ApiCase(api, api_type or "", op or "", entry, backward.get(api), data_dir=data_dir)
        case.skip_reason = _skip_reason(case)
        cases.append(case)
    return cases, task


def _skip_reason(case: ApiCase) -> Optional[str]:
    if not case.api_type:
        return "not an API entry (no <type>.<api>.<n> name)"
    if case.api_type not in L1_PREFIXES:
        return f"{case.api_type} entries are modules, not APIs; only APIs are replayed"
    if case.api_type in COMMUNICATION:
        return "communication API: needs the other ranks, not replayed"
    if case.api_type == "NPU":
        return "NPU custom API: no reference implementation on this machine"
    bare = case.op.split(".")[0]
    if bare in RANDOM_APIS and not _deterministic_dropout(case):
        return "random API: its output depends on the generator state, not replayed"
    if bare in FACTORY_APIS:
        return "factory API returning uninitialised memory: nothing to compare"
    if bare in MUTATING_APIS:
        return "mutating or non-numeric API: its effect is not an output, not replayed"
    if "input_args" not in case.forward and "input_kwargs" not in case.forward:
        return "no recorded inputs (structure-only dump)"
    return None


def _deterministic_dropout(case: ApiCase) -> bool:
    """dropout with training=False or p=0 is an identity and can be checked."""
    if "dropout" not in case.op:
        return False
    kwargs = case.forward.get("input_kwargs") or {}
    args = case.forward.get("input_args") or []
    def val(x):
        return x.get("value") if isinstance(x, dict) else None
    p = val(kwargs.get("p")) if "p" in kwargs else (val(args[1]) if len(args) > 1 else None)
    training = val(kwargs.get("training")) if "training" in kwargs else \
        (val(args[2]) if len(args) > 2 else None)
    return p == 0 or training is False
