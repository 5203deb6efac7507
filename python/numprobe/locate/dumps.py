"""Reading what the rounds wrote: rank dumps, numprobe_env.json, stack.json, summary.json."""
import glob
import json
import os
import re

ENV_FILE = "numprobe_env.json"
_RANK_DIR = re.compile(r"^(rank\d*|proc\d+)$")


def rank_dirs(dump_root):
    """{(step, rank name): directory} of every rank dump under a dump_path. A single process dump
    (proc<pid>, whose name changes every run) is keyed "proc"."""
    found = {}
    for d in sorted(glob.glob(os.path.join(dump_root, "step*", "*"))):
        name = os.path.basename(d)
        step = os.path.basename(os.path.dirname(d))[4:]
        if os.path.isdir(d) and _RANK_DIR.match(name) and step.isdigit():
            key = "proc" if name.startswith("proc") else name
            found[(int(step), key)] = d
    return found


def load_json(path):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except OSError as e:
        raise SystemExit(f"numprobe locate: error: {path}: cannot read: {e.strerror}") from None
    except ValueError as e:
        raise SystemExit(f"numprobe locate: error: {path}: not valid JSON: {e}") from None


def entries(rank_dir):
    """The entry names of a rank dump in the order dump.json holds them (execution order)."""
    return list(load_json(os.path.join(rank_dir, "dump.json")).get("data", {}))


def construct(rank_dir):
    """{entry: parent module entry or None} from construct.json ({} when the dump has none)."""
    path = os.path.join(rank_dir, "construct.json")
    return load_json(path) if os.path.exists(path) else {}


def _summaries(value):
    """The recorded summaries under a dump.json field (tensors and scalars), data names left out:
    the same values give the same summaries."""
    if isinstance(value, dict):
        return {k: _summaries(v) for k, v in value.items() if k != "data_name"}
    if isinstance(value, list):
        return [_summaries(v) for v in value]
    return value


_DUMPS = {}


def _data(rank_dir):
    path = os.path.join(rank_dir, "dump.json")
    if path not in _DUMPS:
        _DUMPS[path] = load_json(path).get("data", {})
    return _DUMPS[path]


def inputs_equal(golden_dir, target_dir, entry):
    """Whether an entry's inputs (forward: its arguments; backward: the gradients it received)
    have the same recorded summaries in both rank dumps. False when either lacks the entry."""
    g, t = _data(golden_dir).get(entry), _data(target_dir).get(entry)
    if g is None or t is None:
        return False
    keys = ("input_args", "input_kwargs", "input")
    return all(_summaries(g.get(k)) == _summaries(t.get(k)) for k in keys)


def structural_differences(golden_root, target_root, limit=20):
    """Entries present in one run only, per rank dump, and rank dumps present on one side only."""
    golden, target = rank_dirs(golden_root), rank_dirs(target_root)
    out = []
    for key in sorted(set(golden) | set(target)):
        step, rank = key
        if key not in golden or key not in target:
            out.append({"step": step, "rank": rank,
                        "only_in": "golden" if key in golden else "target", "entries": None})
            continue
        g, t = entries(golden[key]), entries(target[key])
        gs, ts = set(g), set(t)
        only_g = [e for e in g if e not in ts]
        only_t = [e for e in t if e not in gs]
        if only_g or only_t:
            out.append({"step": step, "rank": rank, "only_in_golden": only_g[:limit],
                        "only_in_target": only_t[:limit],
                        "counts": [len(only_g), len(only_t)]})
    return out


def environment(root):
    """numprobe_env.json of the first rank dump under root (None when the dump has none)."""
    for d in rank_dirs(root).values():
        path = os.path.join(d, ENV_FILE)
        if os.path.exists(path):
            return load_json(path)
    return None


def environment_differences(golden_root, target_root):
    """[{"field", "golden", "target"}] for every summary field whose values differ."""
    g, t = environment(golden_root), environment(target_root)
    if g is None or t is None:
        return [{"field": ENV_FILE, "golden": "present" if g else "missing",
                 "target": "present" if t else "missing"}] if (g or t) else []

    def flat(d, prefix=""):
        for k, v in d.items():
            if isinstance(v, dict):
                yield from flat(v, f"{prefix}{k}.")
            else:
                yield f"{prefix}{k}", v
    gf, tf = dict(flat(g)), dict(flat(t))
    return [{"field": k, "golden": gf.get(k), "target": tf.get(k)}
            for k in sorted(set(gf) | set(tf)) if gf.get(k) != tf.get(k)]


def source_line(rank_dir, entry):
    """The user's line that made an entry: the innermost frame of its stack.json stack outside
    torch (the first frame when every one is torch's)."""
    path = os.path.join(rank_dir, "stack.json")
    if not os.path.exists(path):
        return None
    stacks = load_json(path)
    frames = None
    for value in stacks.values():
        if isinstance(value, list) and len(value) == 2 and entry in value[0]:
            frames = value[1]
            break
    if frames is None:
        frames = stacks.get(entry)
    if not frames:
        return None
    for frame in frames:
        if "/torch/" not in frame.split(",")[0]:
            return " ".join(frame.split())
    return " ".join(frames[0].split())


def choose_pair(summary):
    """The pair the next round follows: the cross-rank origin when compare ordered several ranks
    (summary "origins"), else the first pair with a divergence. None when nothing diverged."""
    pairs = [p for p in summary.get("pairs", []) if p.get("first_divergence")]
    for origin in summary.get("origins", []):
        for p in pairs:
            if p["step"] == origin.get("step") and p["rank"] == origin.get("rank"):
                return p
    return pairs[0] if pairs else None


def tensors_of(entry_body, direction_key):
    """The tensor records (dicts with data_name) under one field of a dump.json entry."""
    found = []

    def walk(v):
        if isinstance(v, dict):
            if "data_name" in v:
                found.append(v)
            else:
                for x in v.values():
                    walk(x)
        elif isinstance(v, list):
            for x in v:
                walk(x)
    walk(entry_body.get(direction_key))
    return found
