"""numprobe locate on the diagnosis suite's fault pairs driven as real scripts (bench/diagnosis/
run_one.py, golden = no fault, target = the fault): does locate end at the injected op, in how
many rounds and how long, and how many bytes it writes against the naive alternative (one full
tensor-mode dump of both runs + one compare). Prints a table; asserts nothing about time.

    PYTHONPATH=python /usr/bin/python3 bench/bench_locate.py [--faults a,b,...] [--split S,...]
                                                             [--work DIR]
--split takes every fault of the named splits of bench/diagnosis/suite.py (tune, eval, held,
held2; held3 with BENCH_DIAGNOSIS_HELD3=1; held4 with BENCH_DIAGNOSIS_HELD4=1, each side run with
its own options and the target in its environment, as bench_diagnosis.py runs them). Each pair's scripts train the fault's own number of
steps (suite `steps`: an optimizer fault shows from step 1), as bench_diagnosis.py runs them;
locate is given step 0 and follows later steps itself.
"""
import argparse
import json
import os
import pathlib
import shutil
import subprocess
import sys
import time

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE / "diagnosis"))
import suite  # noqa: E402

DEFAULT = "gelu_tanh,weight_row,ln_eps,attn_scale,ext_kernel,softmax_dim,lstm_weight_row,bn_eps"


def du(path):
    return sum(f.stat().st_size for f in pathlib.Path(path).rglob("*") if f.is_file())


# held4's target environments (bench/diagnosis/bench_diagnosis.py): what the target's command runs
# under, as `env VAR=value ...` in front of it.
ENVS = {"oldcpu": {"ATEN_CPU_CAPABILITY": "default", "ONEDNN_MAX_CPU_ISA": "SSE41",
                   "OPENBLAS_CORETYPE": "Prescott"},
        "blas": {"LD_LIBRARY_PATH": "/usr/lib/x86_64-linux-gnu/blas"}}


def script(fault, model, scratch, steps=1, opts=None, env=""):
    """One side's training command. opts: run_one.py options besides the fault (held4's bf16 or
    fp16 sides); env: the environment the side runs in (held4's oldcpu target). Locate picks the
    dumped steps itself, so a dump_step option is left out."""
    cmd = (f"{sys.executable} {HERE / 'diagnosis' / 'run_one.py'} --model {model} "
           f"--out {scratch} --steps {steps}" + (f" --fault {fault}" if fault else ""))
    for k, v in (opts or {}).items():
        if k in ("fault", "dump_step") or v is False:
            continue
        cmd += f" --{k}" if v is True else f" --{k} {v}"
    if env:
        cmd = "env " + " ".join(f"{k}={v}" for k, v in ENVS[env].items()) + " " + cmd
    return cmd


def naive(fault, work, cli, env):
    """Both runs dumped whole in tensor mode at level mix, then one compare."""
    d = work / f"{fault.name}.naive"
    shutil.rmtree(d, ignore_errors=True)
    d.mkdir(parents=True)
    t0 = time.monotonic()
    for side, f in (("golden", ""), ("target", fault.name)):
        cfg = d / f"{side}.json"
        cfg.write_text(json.dumps({"task": "tensor", "level": "mix", "dump_path": str(d / side),
                                   "step": [fault.step]}))
        subprocess.run(script(f, fault.model, d / f"{side}.scratch", fault.steps), shell=True,
                       check=True,
                       env=dict(env, NUMPROBE_CONFIG=str(cfg)), capture_output=True)
    subprocess.run([cli, "compare", "-t", str(d / "target"), "-g", str(d / "golden"), "-o",
                    str(d / "compare")], capture_output=True)
    return time.monotonic() - t0, du(d)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--faults", default=None, help=f"comma-separated (default: {DEFAULT})")
    ap.add_argument("--split", default=None,
                    help="every fault of these comma-separated suite splits (with --faults: both)")
    ap.add_argument("--no-naive", action="store_true",
                    help="skip the naive full tensor dump (scores and locate's own cost only)")
    ap.add_argument("--work", default=str(ROOT / "build" / "bench_locate"))
    ap.add_argument("--cli", default=str(ROOT / "build" / "bin" / "numprobe"))
    a = ap.parse_args()
    work = pathlib.Path(a.work)
    work.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, PYTHONPATH=str(ROOT / "python"))
    by_name = {f.name: f for f in suite.FAULTS}
    rows, right = [], 0
    print(f"{'fault':18} {'model':7} {'right':5} {'rounds':6} {'locate s':>8} {'locate MB':>9} "
          f"{'naive s':>7} {'naive MB':>8} {'ratio':>6}  answer")
    names = a.faults.split(",") if a.faults else []
    if a.split:
        splits = a.split.split(",")
        names += [f.name for f in suite.FAULTS if f.split in splits and f.name not in names]
    if not names:
        names = DEFAULT.split(",")
    for name in names:
        fault = by_name[name]
        out = work / f"{name}.locate"
        scratch = work / f"{name}.scratch"
        t0 = time.monotonic()
        p = subprocess.run([a.cli, "locate", "--golden",
                            script("", fault.model, scratch, fault.steps, fault.golden),
                            "--target",
                            script(name, fault.model, scratch, fault.steps, fault.target, fault.env),
                            "-o", str(out)],
                           env=env, capture_output=True, text=True)
        seconds = time.monotonic() - t0
        if not (out / "locate_report.json").exists():  # a locate that broke counts as a miss
            rows.append((name, False))
            print(f"{name:18} {fault.model:7} {'NO':5} {'-':>6} {seconds:8.1f}  locate wrote no "
                  f"report (exit {p.returncode}): {p.stderr.strip().splitlines()[-1:]}")
            continue
        rep = json.loads((out / "locate_report.json").read_text())
        answer = (rep.get("answer") or {}).get("entry")
        ok = p.returncode == 0 and answer in fault.accept
        right += ok
        rounds = len([r for r in rep["rounds"] if r["round"] != 0])
        n_seconds, n_bytes = (float("nan"), 0) if a.no_naive else naive(fault, work, a.cli, env)
        l_bytes = rep["bytes_written"]
        rows.append((name, ok))
        print(f"{name:18} {fault.model:7} {'yes' if ok else 'NO':5} {rounds:6} {seconds:8.1f} "
              f"{l_bytes / 1e6:9.2f} {n_seconds:7.1f} {n_bytes / 1e6:8.2f} "
              f"{n_bytes / max(l_bytes, 1):5.1f}x  {answer} ({(rep.get('answer') or {}).get('acc_check')})")
    print(f"locate ended at the injected op in {right}/{len(rows)} = {100 * right / len(rows):.0f} % "
          f"of the pairs (rounds counted after the preflight; round 4 is an acc-check, no run)")


if __name__ == "__main__":
    main()
