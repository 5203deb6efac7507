"""The msprobe-style config.json of each round (what NUMPROBE_CONFIG points the runs at)."""
import json
import os


def round_config(dump_path, steps, task, level, scope=None, names=None, ranks=None,
                 summary_mode="statistics", data_mode=None):
    """A config.json dict for one run. scope: [A, B] call names; names: the `list` filter;
    data_mode: msprobe's ["forward"] / ["backward"] / ... (None: everything)."""
    cfg = {"task": task, "level": level, "dump_path": dump_path, "step": list(steps),
           "rank": list(ranks or [])}
    section = {"scope": list(scope or []), "list": list(names or [])}
    if task == "statistics":
        section["summary_mode"] = summary_mode
    if data_mode:
        section["data_mode"] = list(data_mode)
    cfg[task] = section
    return cfg


def write_config(path, cfg):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(cfg, f, indent=2)
        f.write("\n")
    return os.path.abspath(path)


def forward_call(entry):
    """The call name a scope or list item takes for an entry: "Module.a.B.forward.0" for a
    module's forward or backward entry, "Functional.relu.3" for an API entry."""
    parts = entry.split(".")
    if entry.startswith("Module."):
        if "parameters_grad" in parts:
            return ".".join(parts[:parts.index("parameters_grad")])
        if len(parts) >= 2 and parts[-2] in ("forward", "backward"):
            return ".".join(parts[:-2] + ["forward", parts[-1]])
        return entry
    if parts[-1] in ("forward", "backward"):
        return ".".join(parts[:-1])
    return entry
