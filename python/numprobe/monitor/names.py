"""msprobe's monitor names: squashed parameter names and row names (docs/monitor.md, "Outputs")."""
NAME_SEP = ":"


def squash_param_name(name, enable=True):
    """msprobe's squash: keep what follows the first recognised container (layers., embedding...).
    The table is the engine's (src/monitor/param_name.cc), which the libtorch TrainerMon uses too.
    (The MindSpore TrainerMon calls numprobe._engine's copy: this module imports no binding until
    used, so it loads without torch.)"""
    from .groups import _C
    return _C.monitor_squash_name(name, enable)


def chunk_prefix(vpp_stage):
    """The virtual pipeline stage prefix of every name: "0:" for a single model."""
    return f"{vpp_stage}{NAME_SEP}"


def slot_names(base, slot, count):
    """Row names of a module's tensors in one slot (input, output): one tensor keeps the slot
    name, several are numbered (msprobe's build_tbtag_tensor_map)."""
    if count == 1:
        return [f"{base}.{slot}"]
    return [f"{base}.{slot}_{i}" for i in range(count)]
