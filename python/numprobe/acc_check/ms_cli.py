"""numprobe acc-check of a MindSpore dump on MindSpore itself (no torch needed): msprobe's flags,
the same result files as the torch replay (docs/acc_check.md, "MindSpore dumps on MindSpore")."""
import argparse
import os
import sys

from numprobe import _engine
from .ms_runner import run_case, save_error_data
from .plan import build_plan, resolve_api_info
from .replay_common import Options, run_cases


def _parser(prog):
    p = argparse.ArgumentParser(prog=prog, description="Replay every API of a MindSpore dump on "
                                "MindSpore against a float64 reference.")
    p.add_argument("-api_info", "--api_info_file", dest="api_info", required=True)
    p.add_argument("-o", "--out_path", dest="out", default=".")
    p.add_argument("-csv_path", "--result_csv_path", dest="csv_path", default="")
    p.add_argument("-save_error_data", dest="save_error_data", action="store_true")
    p.add_argument("--filter", nargs="+", default=None, metavar="REGEX")
    p.add_argument("--seed", type=int, default=1234)
    p.add_argument("--offline", action="store_true")
    p.add_argument("-q", "--quiet", action="store_true")
    p.add_argument("-n", "--num_splits", dest="workers", type=int, default=1,
                   help="multi-acc-check: accepted; the MindSpore replay runs in one process")
    for torch_only in ("-j", "-d", "--repro"):
        p.add_argument(torch_only, default=None, help="torch replay only")
    p.add_argument("--tf32", action="store_true", help="torch replay only")
    return p


def main(argv):
    cmd = argv.pop(0) if argv and argv[0] in ("acc-check", "multi-acc-check") else "acc-check"
    a = _parser("numprobe " + cmd).parse_args(argv)
    for flag, value in (("-j", a.j), ("-d", a.d), ("--repro", a.repro), ("--tf32", a.tf32)):
        if value:
            print(f"numprobe {cmd}: error: {flag} is for the torch replay; this dump is replayed on "
                  "MindSpore (NUMPROBE_ACC_FRAMEWORK=torch replays it on torch)", file=sys.stderr)
            return 1
    try:
        a.api_info = resolve_api_info(a.api_info)
        cases, task = build_plan(a.api_info, a.filter)
    except ValueError as e:
        print(f"numprobe {cmd}: error: {e}", file=sys.stderr)
        return 1
    if a.offline and task != "tensor":
        print(f"numprobe {cmd}: error: {a.api_info}: --offline needs a tensor dump (task "
              f"\"tensor\"), this one is \"{task}\"", file=sys.stderr)
        return 1
    root = os.path.dirname(os.path.abspath(a.api_info))
    data_dirs = [c.data_dir for c in cases[:1]] + [os.path.join(root, "dump_tensor_data"), root]
    opts = Options(seed=a.seed, real_data=task == "tensor", offline=a.offline, data_dirs=data_dirs)
    try:
        os.makedirs(a.out, exist_ok=True)
        files = _engine.AccResultFiles.resume(a.csv_path) if a.csv_path else \
            _engine.AccResultFiles.create(a.out)
    except (OSError, ValueError) as e:
        print(f"numprobe {cmd}: error: {e}", file=sys.stderr)
        return 1
    error_dir = os.path.join(a.out, "ut_error_data")
    save = (lambda api, arrays: save_error_data(error_dir, api, arrays)) if a.save_error_data \
        else None
    counts, done, secs = run_cases(cases, files, lambda case: run_case(case, opts), _engine, save)
    print(f"acc-check (MindSpore): {done} APIs in {secs:.2f} s ({done / max(secs, 1e-9):.0f}/s): "
          f"{counts.get('pass', 0)} pass, {counts.get('warning', 0)} warning, "
          f"{counts.get('error', 0)} error, {counts.get('SKIP', 0)} SKIP")
    print(f"  {files.result_path}\n  {files.details_path}")
    return 0
