"""numprobe's training monitor: msprobe's TrainerMon for any torch model and optimizer.

    from numprobe import TrainerMon
    mon = TrainerMon("monitor_config.json")
    mon.set_monitor(model, grad_acc_steps=1, optimizer=optimizer)

The hooks live here; each tensor is summarised by the engine (numprobe._C.MonitorCollector: one
fused pass, float64 results, device results fetched once a step) and written in msprobe's layout
(docs/monitor.md).
"""
from .trainer_mon import TrainerMon

__all__ = ["TrainerMon"]
