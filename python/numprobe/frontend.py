"""``numprobe.PrecisionDebugger``, ``numprobe.TrainerMon`` and ``numprobe.seed_all`` for either
framework.

The torch capture (numprobe.debugger, over ``_C`` and libtorch) and the MindSpore capture
(numprobe.mindspore, over the torch-free ``_engine``) are separate; this picks one per call, so a
MindSpore user never imports torch: ``framework="mindspore"``/``"pytorch"`` when given, else the
model's type (``model=`` a ``mindspore.nn.Cell``), else the framework the script has imported
(torch wins when both are), else the one installed.
"""
import importlib.util
import sys


def _mindspore_wanted(framework=None, model=None):
    if framework is not None:
        if framework not in ("mindspore", "pytorch"):
            raise ValueError(f"framework: {framework!r} is not one of 'pytorch', 'mindspore'")
        return framework == "mindspore"
    if model is not None:
        ms = sys.modules.get("mindspore")
        return ms is not None and isinstance(model, ms.nn.Cell)
    if "torch" in sys.modules:
        return False
    if "mindspore" in sys.modules:
        return True
    return (importlib.util.find_spec("torch") is None
            and importlib.util.find_spec("mindspore") is not None)


def _implementation(framework=None, model=None):
    if _mindspore_wanted(framework, model):
        from .mindspore import debugger
    else:
        from . import debugger
    return debugger


class _Dispatching(type):
    """isinstance(x, numprobe.<Name>) is true for either framework's class of that name, among
    the modules loaded (cls._modules)."""
    def __instancecheck__(cls, obj):
        classes = [getattr(m, cls.__name__) for m in map(sys.modules.get, cls._modules)
                   if m is not None]
        return any(isinstance(obj, c) for c in classes)


class PrecisionDebugger(metaclass=_Dispatching):
    """msprobe's ``PrecisionDebugger(config_path, task, dump_path, level, step, model)``: an
    instance of numprobe.debugger.PrecisionDebugger (torch) or of
    numprobe.mindspore.PrecisionDebugger (MindSpore, PyNative), chosen as the module says."""
    _modules = ("numprobe.debugger", "numprobe.mindspore.debugger")

    def __new__(cls, *args, framework=None, **kwargs):
        return _implementation(framework, kwargs.get("model")).PrecisionDebugger(*args, **kwargs)


class TrainerMon(metaclass=_Dispatching):
    """msprobe's ``TrainerMon(config_file_path, process_group=None, params_have_main_grad=True)``:
    an instance of numprobe.monitor.TrainerMon (torch) or of numprobe.mindspore.TrainerMon
    (MindSpore Cells, PyNative), chosen as the module says (the model comes later, at
    set_monitor)."""
    _modules = ("numprobe.monitor.trainer_mon", "numprobe.mindspore.trainer_mon")

    def __new__(cls, *args, framework=None, **kwargs):
        if _mindspore_wanted(framework):
            from .mindspore.trainer_mon import TrainerMon as implementation
        else:
            from .monitor.trainer_mon import TrainerMon as implementation
        return implementation(*args, **kwargs)


def seed_all(seed=1234, mode=False, rm_dropout=False, framework=None):
    return _implementation(framework).seed_all(seed, mode=mode, rm_dropout=rm_dropout)
