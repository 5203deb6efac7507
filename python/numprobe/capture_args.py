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
