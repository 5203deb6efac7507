"""Hyper-parameters: parsed from launch scripts (`--flag value` on the python/torchrun/deepspeed
line, with `$VAR`/`${VAR}` expanded from the script's assignments, `*_ARGS="..."` blocks included)
and from yaml files (flattened to dotted keys), or taken from an argparse Namespace / dict of the
running job. The compare (src/config_check/config_compare_hyperparameters.cc) matches names across
runs exactly, then through its alias table (lr and learning_rate are one), then by spelling."""
import os
import re
import shlex

from .pack_io import PackError

STATIC = "hyperparameters/hyperparameters_static.json"
DYNAMIC = "hyperparameters/hyperparameters_dynamic.json"

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
