"""Hyper-parameters: parsed from launch scripts (`--flag value` on the python/torchrun/deepspeed
line, with `$VAR`/`${VAR}` expanded from the script's assignments, `*_ARGS="..."` blocks included)
and from yaml files (flattened to dotted keys), or taken from an argparse Namespace / dict of the
running job. Names are matched across runs exactly, then through an alias table (lr and
learning_rate are one), then by spelling similarity (difflib ratio > 0.8), as msprobe matches them."""
import difflib
import os
import re
import shlex

from .pack_io import PackError

STATIC = "hyperparameters/hyperparameters_static.json"
DYNAMIC = "hyperparameters/hyperparameters_dynamic.json"
HEADER = ["file_name", "bench_para", "cmp_para", "bench_value", "cmp_value", "matched_with", "level"]

# canonical name -> its other spellings (after `-` -> `_`, lower case)
ALIASES = {
    "learning_rate": ("lr", "learningrate", "base_lr", "max_lr"),
    "min_learning_rate": ("min_lr",),
    "micro_batch_size": ("mbs", "micro_batch", "per_device_train_batch_size",
                         "train_micro_batch_size_per_gpu", "batch_size_per_gpu", "batch_size", "bs"),
    "global_batch_size": ("gbs", "train_batch_size", "total_batch_size"),
    "seq_length": ("seq_len", "max_seq_len", "max_seq_length", "sequence_length", "block_size",
                   "max_length", "cutoff_len"),
    "tensor_model_parallel_size": ("tp", "tp_size", "tensor_parallel_size", "tensor_parallel"),
    "pipeline_model_parallel_size": ("pp", "pp_size", "pipeline_parallel_size"),
    "context_parallel_size": ("cp", "cp_size"),
    "expert_model_parallel_size": ("ep", "ep_size", "expert_parallel_size"),
    "sequence_parallel": ("sp",),
    "epochs": ("num_epochs", "max_epochs", "epoch", "num_train_epochs"),
    "train_iters": ("max_steps", "train_steps", "iterations", "max_iters"),
    "weight_decay": ("wd", "weightdecay"),
    "dropout": ("dropout_rate", "drop_rate", "hidden_dropout"),
    "gradient_accumulation_steps": ("grad_accum", "accumulate_grad_batches", "gradient_accumulation"),
    "clip_grad": ("max_grad_norm", "grad_clip", "gradient_clipping"),
    "lr_warmup_iters": ("warmup_steps", "lr_warmup_steps", "num_warmup_steps"),
    "seed": ("random_seed", "manual_seed"),
    "compute_dtype": ("bf16", "fp16", "fp32", "dtype", "precision", "mixed_precision"),
    "residual_dtype": ("fp32_residual_connection",),
    "softmax_compute_dtype": ("attention_softmax_in_fp32",),
}
_LAUNCHER = re.compile(r"(^|[\s;&|(])(python[0-9.]*|torchrun|deepspeed|msrun|accelerate|"
                       r"mpirun|srun)(\s|$)")
_ASSIGN = re.compile(r"^(?:export\s+|local\s+|declare\s+(?:-\w+\s+)?)?([A-Za-z_][A-Za-z0-9_]*)="
                     r"(\"(?:[^\"\\]|\\.)*\"|'[^']*'|\S*)", re.S)
_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)")


def _logical_lines(text):
    """Lines with comments dropped, `\\` continuations and multi-line quotes joined."""
    out, current = [], ""
    for raw in text.splitlines():
        stripped = raw.strip()
        if not current and stripped.startswith("#"):
            continue
        if not current:
            stripped = re.sub(r"\s#.*$", "", stripped)  # a trailing comment (not inside a quote)
        current = f"{current} {stripped}" if current else stripped
        if current.endswith("\\"):
            current = current[:-1].rstrip()
            continue
        if current.count('"') % 2 == 1:  # an open double quote: the value goes on
            continue
        if current:
            out.append(current)
        current = ""
    if current:
        out.append(current)
    return out


def _expand(text, variables, depth=0):
    if depth > 8:
        return text
    expanded = _VAR.sub(lambda m: variables.get(m.group(1) or m.group(2), m.group(0)), text)
    return expanded if expanded == text else _expand(expanded, variables, depth + 1)


def parse_shell(path, text):
    variables, params = {}, {}
    for line in _logical_lines(text):
        m = _ASSIGN.match(line)
        if m and not _LAUNCHER.search(line[m.end():]):
            value = m.group(2)
            if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
                value = value[1:-1]
            variables[m.group(1)] = _expand(value, variables)
            continue
        if not _LAUNCHER.search(line):
            continue
        try:
            tokens = shlex.split(_expand(line, variables), comments=False)
        except ValueError as e:
            raise PackError(f"{path}: cannot split the launch line ({e}): {line[:120]}") from e
        for i, token in enumerate(tokens):
            if not token.startswith("--") or len(token) == 2:
                continue
            name, eq, value = token[2:].partition("=")
            if not eq:
                nxt = tokens[i + 1] if i + 1 < len(tokens) else None
                value = nxt if nxt is not None and not nxt.startswith("--") else True
            params[name] = value
    return params


def _flatten(value, prefix, out):
    if isinstance(value, dict):
        for k, v in value.items():
            _flatten(v, f"{prefix}.{k}" if prefix else str(k), out)
    elif isinstance(value, list) and not all(isinstance(x, (int, float, str, bool, list)) for x in value):
        for i, v in enumerate(value):
            _flatten(v, f"{prefix}.{i}" if prefix else str(i), out)
    elif isinstance(value, (int, float, str, bool, list)) or value is None:
        out[prefix] = value
    return out


def parse_yaml(path, text):
    try:
        import yaml  # PyYAML: Debian's python3-yaml, or pip's
    except ImportError as e:
        raise PackError(f"{path}: reading yaml needs PyYAML (python3-yaml / pip install pyyaml)") from e
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as e:
        raise PackError(f"{path}: not valid yaml ({e})") from e
    return _flatten(data, "", {}) if data is not None else {}


def parse_files(paths):
    """{name: value} of every script/yaml in paths; a name set twice to different values keeps both."""
    merged = {}
    for path in paths:
        if not os.path.isfile(path):
            raise PackError(f"{path}: no such script or yaml file")
        try:
            with open(path, encoding="utf-8") as f:
                text = f.read()
        except (OSError, UnicodeDecodeError) as e:
            raise PackError(f"{path}: cannot read ({e})") from e
        ext = os.path.splitext(path)[1].lower()
        parsed = parse_yaml(path, text) if ext in (".yaml", ".yml") else parse_shell(path, text)
        for k, v in parsed.items():
            if k in merged and merged[k] != v:
                old = merged[k]
                values = old["values"] if isinstance(old, dict) and "values" in old else [old]
                merged[k] = {"description": "duplicate_value", "values": values + [v]}
            else:
                merged[k] = v
    return merged


def from_namespace(args):
    """{name: value} of an argparse Namespace or a dict; values JSON cannot hold become strings."""
    items = vars(args) if hasattr(args, "__dict__") and not isinstance(args, dict) else dict(args)
    out = {}
    for k, v in items.items():
        out[str(k)] = v if isinstance(v, (int, float, str, bool, list, type(None))) else str(v)
    return out


def _key(name):
    return name.split(".")[-1].replace("-", "_").lower()


def _canonical(key):
    for canonical, aliases in ALIASES.items():
        if key == canonical or key in aliases:
            return canonical
    return None


def _match(key, candidates):
    if key in candidates:
        return key, "pure name"
    canonical = _canonical(key)
    if canonical:
        for other in candidates:
            if _canonical(other) == canonical:
                return other, "mapping"
    best, best_ratio = None, 0.8
    for other in candidates:
        ratio = difflib.SequenceMatcher(None, key, other).ratio()
        if ratio > best_ratio:
            best, best_ratio = other, ratio
    return (best, f"similarity:{best_ratio:.2f}") if best else (None, "")


def _text(value):
    return str(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else value


def compare(bench, cmp, file_name):
    """Rows: error for a matched parameter whose values differ, warning for one only one side has."""
    bench_keys = {_key(k): k for k in bench}
    cmp_keys = {_key(k): k for k in cmp}
    rows = []
    for key, bench_name in bench_keys.items():
        match, how = _match(key, cmp_keys)
        b_value = _text(bench[bench_name])
        if match is None:
            rows.append([file_name, bench_name, "Only in benchmark", str(b_value), "", "", "warning"])
            continue
        cmp_name = cmp_keys.pop(match)
        c_value = _text(cmp[cmp_name])
        if b_value != c_value:
            rows.append([file_name, bench_name, cmp_name, str(b_value), str(c_value), how, "error"])
    for cmp_name in cmp_keys.values():
        rows.append([file_name, "Only in comparison", cmp_name, "", str(_text(cmp[cmp_name])), "",
                     "warning"])
    return sorted(rows, key=lambda r: (r[6] != "error", r[1], r[2]))
