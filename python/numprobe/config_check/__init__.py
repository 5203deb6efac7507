"""numprobe's config_check: prove two trainings were set up alike (docs/config_check.md).

    ConfigChecker.apply_patches()            # before the job seeds or draws anything
    checker = ConfigChecker(model=model, shell_path=["run.sh"], output_zip_path="pack.zip",
                            hyperparameters=args)   # an argparse Namespace or a dict, optional
    ...train...                              # the pack is written at exit, or by checker.write()

`numprobe config-check -d run.sh cfg.yaml -o pack.zip` writes a static pack (environment,
packages, hyper-parameters); `numprobe config-check -c golden.zip target.zip -o out/` compares."""
import atexit
import json
import os

from . import env, hyperparams, packages, random_calls, tensor_stats
from .pack_io import PackError, write_pack

__all__ = ["ConfigChecker", "PackError"]


def _rank():
    try:
        import torch.distributed as dist
        if dist.is_available() and dist.is_initialized():
            return dist.get_rank()
    except ImportError:
        pass
    return int(os.environ.get("RANK", "0") or 0)


class ConfigChecker:
    """Collects one run's pack. Rank 0 records environment, packages and hyper-parameters; every
    rank its weights, inputs and random calls (one zip per rank when ranks share a path: `pack.zip`
    becomes `pack_rank1.zip`, ... for rank > 0)."""

    def __init__(self, model=None, shell_path=None, output_zip_path="./config_check_pack.zip",
                 fmk="pytorch", hyperparameters=None):
        if not isinstance(output_zip_path, (str, os.PathLike)) or not str(output_zip_path).endswith(".zip"):
            raise PackError(f"{output_zip_path}: output_zip_path must name a .zip file")
        if fmk != "pytorch":
            raise PackError(f"fmk={fmk!r}: numprobe's config_check supports 'pytorch' only")
        if isinstance(model, (list, tuple)):
            model = model[0] if model else None
        self.rank = _rank()
        path = str(output_zip_path)
        self.output_zip_path = path if self.rank == 0 else f"{path[:-4]}_rank{self.rank}.zip"
        self.fmk = fmk
        self.step = 0
        self.members = {}
        if self.rank == 0:
            paths = [shell_path] if isinstance(shell_path, (str, os.PathLike)) else list(shell_path or [])
            self.members = setup_members([str(p) for p in paths])
            if hyperparameters is not None:
                self.set_hyperparameters(hyperparameters)
        self._hook = None
        if model is not None:
            import torch
            if not isinstance(model, torch.nn.Module):
                raise PackError(f"model is a {type(model).__name__}, not a torch.nn.Module")
            if _hook_takes_kwargs():  # torch >= 2.0
                self._hook = model.register_forward_pre_hook(self._before_forward, with_kwargs=True)
            else:
                self._hook = model.register_forward_pre_hook(self._before_forward_args)
        atexit.register(self.write)

    @staticmethod
    def apply_patches(fmk="pytorch"):
        """Wraps the random APIs of random, numpy and torch (and Megatron's get_args, when
        importable) so every call is recorded with its stack."""
        random_calls.apply_patches(fmk)
        _patch_megatron_args()

    def set_hyperparameters(self, args):
        """Records the job's arguments (argparse Namespace or dict) as the dynamic hyper-parameters."""
        self.members[hyperparams.DYNAMIC] = json.dumps(hyperparams.from_namespace(args), indent=4,
                                                       default=str)

    def _before_forward_args(self, model, args):
        self.record(model, args)

    def _before_forward(self, model, args, kwargs):
        self.record(model, args, kwargs)

    def record(self, model, args=(), kwargs=None):
        """Records one step by hand: the weights of model and the statistics of its inputs
        (args, kwargs), as the forward pre-hook of `model=` does. For a job whose forward is not
        the place, e.g. one captured by PrecisionDebugger at the same time (the hook's reductions
        would be captured as the model's ops)."""
        import torch
        kwargs = kwargs or {}
        with torch.no_grad():
            where = f"step{self.step}/rank{self.rank}"
            self.members[f"weights/{where}/weight.json"] = json.dumps(tensor_stats.weights(model),
                                                                      indent=1)
            self.members[f"dataset/{where}/dataset.json"] = json.dumps(
                tensor_stats.inputs(args, kwargs), indent=1)
        self.step += 1

    def write(self):
        """Writes the pack now (and again at exit, with what came since)."""
        if _megatron_args is not None and hyperparams.DYNAMIC not in self.members:
            self.set_hyperparameters(_megatron_args)
        if random_calls._patched:
            self.members[f"random/rank{self.rank}.json"] = json.dumps(random_calls.snapshot(), indent=1)
        write_pack(self.output_zip_path, self.members)
        return self.output_zip_path


def _hook_takes_kwargs():
    import inspect

    import torch
    return "with_kwargs" in inspect.signature(torch.nn.Module.register_forward_pre_hook).parameters


_megatron_args = None


def _patch_megatron_args():
    try:
        from megatron import training
    except Exception:  # noqa: BLE001 - no Megatron (or a broken one): nothing to patch
        return
    original = training.get_args
    if getattr(original, "__numprobe_tracked__", False):
        return

    def get_args(*a, **k):
        global _megatron_args
        result = original(*a, **k)
        if _megatron_args is None:
            _megatron_args = result
        return result

    get_args.__numprobe_tracked__ = True
    training.get_args = get_args


def setup_members(script_paths):
    """Environment, packages and the hyper-parameters parsed from script_paths: a static pack's
    members, and rank 0's first members of a dynamic one."""
    members = {"env": env.collect(), "pip": packages.collect()}
    if script_paths:
        members[hyperparams.STATIC] = json.dumps(hyperparams.parse_files(script_paths), indent=4,
                                                 default=str)
    return members


def static_pack(script_paths, output_zip_path):
    """The pack of `numprobe config-check -d`."""
    members = setup_members(script_paths)
    write_pack(output_zip_path, members)
    return members
