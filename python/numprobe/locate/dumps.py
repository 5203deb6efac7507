"""Reading what the rounds wrote: rank dumps, numprobe_env.json, stack.json, summary.json."""
import json
import os

from .. import _engine

ENV_FILE = "numprobe_env.json"


def rank_dirs(dump_root):
    """{(step, rank name): directory} of every rank dump of a dump_path, found by the engine
    (numprobe._engine.find_rank_dumps: compare's and info's discovery) and kept where the rounds
    write them: dump_path/step<N>/<rank>. A single process dump (proc<pid>, whose name changes every
    run) is keyed "proc"."""
    try:
        found = _engine.find_rank_dumps(dump_root)
    except _engine.NumprobeError:
        return {}  # no dump_path, or nothing dumped under it: no rank dumps
    root = os.path.normpath(dump_root)
    out = {}
    for loc in found:
        name = loc["rank_label"]
        if name and loc["step"] >= 0 and \
                os.path.normpath(os.path.dirname(os.path.dirname(loc["dir"]))) == root:
            out[(loc["step"], "proc" if name.startswith("proc") else name)] = loc["dir"]
    return out


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
    """{entry: parent module entry or None} from construct.json ({} when the dump has none),
    read by the engine (numprobe._engine.read_construct_json)."""
    path = os.path.join(rank_dir, "construct.json")
    return _engine_read(_engine.read_construct_json, path) if os.path.exists(path) else {}


def _engine_read(reader, path):
    """A side file read by the engine; its error (naming the file and byte) ends locate."""
    try:
        return reader(path)
    except _engine.NumprobeError as e:
        raise SystemExit(f"numprobe locate: error: {e}") from None


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
    frames = _engine_read(_engine.read_stack_json, path).get(entry)
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
