"""numprobe's training monitor: msprobe's TrainerMon for any torch model and optimizer.

    from numprobe import TrainerMon
    mon = TrainerMon("monitor_config.json")
    mon.set_monitor(model, grad_acc_steps=1, optimizer=optimizer)

The hooks live here; each tensor is summarised by the engine (numprobe._C.MonitorCollector: one
fused pass, float64 results, device results fetched once a step) and written in msprobe's layout
(docs/monitor.md). TrainerMon loads on first use (PEP 562): the framework-free schedule
(numprobe.monitor.schedule) is shared with the MindSpore TrainerMon, which never imports torch.
"""
__all__ = ["TrainerMon"]


def __getattr__(name):
    if name == "TrainerMon":
        from .trainer_mon import TrainerMon
        return TrainerMon
    raise AttributeError(f"module 'numprobe.monitor' has no attribute {name!r}")
