"""numprobe acc-check / multi-acc-check (msprobe's acc_check / multi_acc_check flags accepted).

    python -m numprobe.acc_check acc-check -api_info dump.json -o out
    python -m numprobe.acc_check multi-acc-check -api_info dump.json -o out -n 2
"""
import argparse
import os
import sys
import time

import torch

from numprobe import _C
from .plan import build_plan, resolve_api_info
from .replay_common import Options, run_cases, worst
from .runner import run_case, save_error_data
from .repro import write_repro


def _parser(prog):
    p = argparse.ArgumentParser(prog=prog, description="Replay every API of a dump against a "
                                "float64 CPU reference and judge each with msprobe's standards.")
    p.add_argument("-api_info", "--api_info_file", dest="api_info", required=True,
                   help="dump.json (statistics: random inputs from the recorded stats; tensor: the "
                        "recorded inputs) or msprobe's forward.json")
    p.add_argument("-o", "--out_path", dest="out", default=".", help="output directory")
    p.add_argument("-csv_path", "--result_csv_path", dest="csv_path", default="",
                   help="accuracy_checking_result_*.csv of an interrupted run: continue it")
    p.add_argument("-save_error_data", dest="save_error_data", action="store_true",
                   help="save inputs and outputs of failing APIs as .npy")
    p.add_argument("--filter", nargs="+", default=None, metavar="REGEX",
                   help="replay only APIs whose name matches one of these regular expressions")
    p.add_argument("-j", "--threads", dest="threads", type=int, default=1,
                   help="torch intra-op threads per process (default 1)")
    p.add_argument("--seed", type=int, default=1234, help="seed of the generated inputs")
    p.add_argument("--offline", action="store_true",
                   help="tensor dumps: take the recorded outputs as the device result (no device "
                        "needed)")
    p.add_argument("-d", "--device", default=None,
                   help="device under test (default: cuda when available, else cpu)")
    p.add_argument("--tf32", action="store_true",
                   help="CUDA: let matmul and convolution use TF32 (torch's default for cuDNN "
                        "convolutions); by default float32 APIs are replayed at full float32 "
                        "precision and deterministically")
    p.add_argument("--repro", metavar="API", default=None,
                   help="write a standalone script replaying one API (e.g. Functional.gelu.0) and "
                        "exit")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress line")
    if prog.endswith("multi-acc-check"):
        p.add_argument("-n", "--num_splits", dest="workers", type=int, default=2,
                       help="worker processes (default 2)")
    return p


def _mindspore(cases):
    for c in cases:
        for leaf in (c.forward.get("input_args") or []):
            if isinstance(leaf, dict) and str(leaf.get("type", "")).startswith("mindspore."):
                return True
        if c.api_type in ("Mint", "MintFunctional"):
            return True
    return False


def _options(a, task):
    real = task == "tensor"
    if a.offline and not real:
        raise SystemExit(f"numprobe acc-check: error: {a.api_info}: --offline needs a tensor dump "
                         f"(task \"tensor\"), this one is \"{task}\"")
    device = a.device or ("cuda" if torch.cuda.is_available() else "cpu")
    root = os.path.dirname(os.path.abspath(a.api_info))
    return Options(seed=a.seed, real_data=real, offline=a.offline, device=device,
                   data_dirs=[os.path.join(root, "dump_tensor_data"), root])


def _run_cases(cases, files, opts, a, mindspore, progress):
    error_dir = os.path.join(a.out, "ut_error_data")
    save = (lambda api, arrays: save_error_data(error_dir, api, arrays)) if a.save_error_data \
        else None
    return run_cases(cases, files, lambda case: run_case(case, opts, mindspore), _C, save,
                     progress)


def _keep_freed_memory():
    """glibc returns freed blocks of more than 128 KB (its default mmap threshold) and a freed top
    of the heap to the kernel, so every fresh 1-8 MB tensor of the replay (float64 references,
    gradients, copies) page-faults its memory in again: that cost more than the arithmetic. Keep
    blocks up to 32 MB (glibc's maximum) in the heap and do not trim it; memory stays at the
    run's peak."""
    try:
        import ctypes
        libc = ctypes.CDLL(None)
        m_trim_threshold, m_mmap_threshold = -1, -3
        libc.mallopt(m_mmap_threshold, 32 << 20)
        libc.mallopt(m_trim_threshold, 1 << 30)
    except (OSError, AttributeError):  # not glibc: nothing to tune
        pass


def _limit_blas_threads(n):
    """torch.set_num_threads does not reach OpenBLAS's own thread pool (Debian's torch calls
    OpenBLAS for float64 matmul/conv), which starts one thread per core: -j covers it too, so one
    process uses the cores it was given and forked workers do not fight over them."""
    try:
        import ctypes
        with open("/proc/self/maps", encoding="utf-8") as f:
            libs = {line.split()[-1] for line in f if "libopenblas" in line}
        for lib in libs:
            ctypes.CDLL(lib).openblas_set_num_threads(n)
    except (OSError, AttributeError, IndexError):  # no OpenBLAS, or not Linux
        pass


def _cuda_precision(tf32):
    """cuDNN convolutions use TF32 (10-bit mantissa) unless told not to: against the float64
    reference they fail msprobe's float32 thresholds however right the kernel is. acc-check judges
    kernels, so TF32 is off unless asked for, and cuDNN picks deterministic algorithms (a rerun,
    or another worker, gives the same rows). Setting these flags does not initialise CUDA."""
    torch.backends.cudnn.allow_tf32 = tf32
    torch.backends.cuda.matmul.allow_tf32 = tf32
    torch.backends.cudnn.deterministic = True
    torch.backends.cudnn.benchmark = False


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    cmd = argv.pop(0) if argv and argv[0] in ("acc-check", "multi-acc-check") else "acc-check"
    a = _parser("numprobe " + cmd).parse_args(argv)
    _keep_freed_memory()
    torch.set_num_threads(max(1, a.threads))
    _limit_blas_threads(max(1, a.threads))
    _cuda_precision(a.tf32)
    try:
        a.api_info = resolve_api_info(a.api_info)
        cases, task = build_plan(a.api_info, a.filter)
    except ValueError as e:
        print(f"numprobe {cmd}: error: {e}", file=sys.stderr)
        return 1
    opts = _options(a, task)
    mindspore = _mindspore(cases)
    try:
        os.makedirs(a.out, exist_ok=True)
    except OSError as e:
        print(f"numprobe {cmd}: error: {a.out}: cannot create the output directory: "
              f"{e.strerror or e}", file=sys.stderr)
        return 1

    if a.repro:
        case = next((c for c in cases if c.name == a.repro), None)
        if case is None:
            print(f"numprobe {cmd}: error: {a.api_info}: no API named {a.repro}", file=sys.stderr)
            return 1
        path = write_repro(case, opts, a.out)
        print(f"wrote {path}  (run: python3 {path})")
        return 0

    try:
        files = _C.AccResultFiles.resume(a.csv_path) if a.csv_path else \
            _C.AccResultFiles.create(a.out)
    except ValueError as e:
        print(f"numprobe {cmd}: error: {e}", file=sys.stderr)
        return 1

    if cmd == "multi-acc-check" and a.workers > 1:
        t0 = time.time()
        rcs = _run_workers(cases, files, opts, a, mindspore)
        secs = time.time() - t0
        if any(rcs):
            print(f"numprobe {cmd}: error: a worker failed (exit codes {rcs}); rerun with "
                  f"-csv_path {files.result_path} to finish", file=sys.stderr)
            return 1
        counts = _count(files.result_path)
        done = sum(counts.values())
    else:
        counts, done, secs = _run_cases(cases, files, opts, a, mindspore, not a.quiet)

    print(f"acc-check: {done} APIs in {secs:.2f} s ({done / max(secs, 1e-9):.0f}/s): "
          f"{counts.get('pass', 0)} pass, {counts.get('warning', 0)} warning, "
          f"{counts.get('error', 0)} error, {counts.get('SKIP', 0)} SKIP")
    print(f"  {files.result_path}\n  {files.details_path}")
    return 0


def _run_workers(cases, files, opts, a, mindspore):
    """multi-acc-check: this process and a.workers - 1 forked copies of it take the APIs one at a
    time from a shared counter, appending to the same two files (each API's rows in single
    writes). Forked workers share the parent's imported torch instead of starting their own
    (about 1.5 s each), and pulling work keeps the cores busy to the end whatever the APIs cost.
    The inputs of an API depend only on the seed and its name, so the rows are those one worker
    writes, in another order. Returns the workers' exit codes (0: all went through)."""
    import multiprocessing
    import traceback
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        # A forked child cannot use a CUDA context its parent created.
        print("numprobe multi-acc-check: CUDA is already initialised in this process; running the "
              "APIs in one worker", file=sys.stderr)
        _run_cases(cases, files, opts, a, mindspore, False)
        return [0]
    lock = multiprocessing.Lock()
    next_index = multiprocessing.RawValue("q", 0)

    def claimed():
        while True:
            with lock:
                i = next_index.value
                next_index.value = i + 1
            if i >= len(cases):
                return
            yield cases[i]

    sys.stdout.flush()
    sys.stderr.flush()
    pids = []
    for _ in range(a.workers - 1):
        pid = os.fork()
        if pid == 0:  # a worker: its share, then out without the parent's exit handlers
            code = 0
            try:
                _run_cases(claimed(), files, opts, a, mindspore, False)
            except BaseException:  # noqa: B036 - reported, and the parent sees the exit code
                traceback.print_exc()
                code = 1
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
                os._exit(code)
        pids.append(pid)
    rcs = [0]
    try:
        _run_cases(claimed(), files, opts, a, mindspore, False)
    except Exception:
        traceback.print_exc()
        rcs = [1]
    for pid in pids:
        _, status = os.waitpid(pid, 0)
        rcs.append(os.waitstatus_to_exitcode(status))
    return rcs


def _count(result_csv):
    import csv
    counts = {}
    with open(result_csv, newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f))[1:]
    for r in rows:
        verdict = worst(r[1], r[2], _C)
        counts[verdict] = counts.get(verdict, 0) + 1
    return counts


if __name__ == "__main__":
    sys.exit(main())
