"""The config a PrecisionDebugger captures with, from its arguments: config.json, overridden by
the constructor's task/dump_path/level/step, or ``NUMPROBE_CONFIG=<config.json>`` alone (set by
``numprobe locate``, docs/locate.md). Shared by the torch and the MindSpore capture; each passes its
engine's config check and error class. No torch, no engine import here."""
import json
import os

CONFIG_VARIABLE = "NUMPROBE_CONFIG"


def load_config(config_path, check, error):
    if config_path is None:
        return {}, "<arguments>"
    try:
        with open(config_path, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        raise error(f"{config_path}: cannot read config: {e.strerror}") from None
    check(text, str(config_path))
    return json.loads(text), str(config_path)


def config_from_arguments(config_path, task, dump_path, level, step, check, error):
    """(config dict, its source's name) for a PrecisionDebugger constructed with these."""
    forced = os.environ.get(CONFIG_VARIABLE)
    if forced:
        try:
            return load_config(forced, check, error)
        except error as e:
            raise error(f"{CONFIG_VARIABLE}: {e}") from None
    cfg, source = load_config(config_path, check, error)
    if task is not None:
        cfg["task"] = task
    if dump_path is not None:
        cfg["dump_path"] = str(dump_path)
    if level is not None:
        cfg["level"] = level
    if step is not None:
        cfg["step"] = list(step) if isinstance(step, (list, tuple)) else [step]
    return cfg, source


class OtherFrameworkFieldWarning(UserWarning):
    """A config field that only the other framework's msprobe dump reads: numprobe ignores it."""


# Dump-task fields msprobe reads for one framework only (its pt_config.py / ms_config.py): a
# config written for the other framework keeps them, numprobe's shared parser accepts them, and
# they do nothing here. Said once, by name, never silently.
_ONLY_FOR = {
    "mindspore": {"file_format": "MindSpore's graph-mode dump (npy or bin files)",
                  "device": "MindSpore's dump (where statistics are computed)"},
    "pytorch": {"bench_path": "PyTorch's dump", "diff_nums": "PyTorch's dump"},
}


def warn_other_framework_fields(cfg, source, framework):
    """Warns (OtherFrameworkFieldWarning) for each field of cfg's task section that msprobe reads
    for another framework than `framework` ("pytorch" or "mindspore")."""
    import warnings
    section = cfg.get(cfg.get("task") or "statistics")
    if not isinstance(section, dict):
        return
    for other, fields in _ONLY_FOR.items():
        if other == framework:
            continue
        for field, meaning in fields.items():
            if field in section:
                warnings.warn(f"{source}: field \"{cfg.get('task') or 'statistics'}.{field}\" is "
                              f"read by {meaning} only; numprobe's {framework} capture ignores it",
                              OtherFrameworkFieldWarning, stacklevel=3)
