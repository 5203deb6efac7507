"""Diagnosis benchmark: does `numprobe compare` name the op where two training runs part?

Runs every pair of suite.py (a golden and a target capture, each its own process) in the
statistics, md5 and tensor modes, compares them with the CLI and scores the answer
(summary.json: `suspects`, else `first_divergence`) against the fault's accepted entries.
Noise pairs must give no answer at all. Prints one table and the accuracy per mode.

usage: bench_diagnosis.py [--work DIR] [--cli build/bin/numprobe] [--pythonpath python]
                          [--modes statistics,md5,tensor] [--only NAME,...] [--recapture]
                          [--split SPLIT,...] [--skip-split SPLIT,...] [--capture-only]
                          [--jobs N] [--json results.json]
Captures are kept in --work and reused while models.py, run_one.py and numprobe's extension are
unchanged (--recapture forces them); compares always run again.
--skip-split held2 (or BENCH_DIAGNOSIS_SKIP_SPLIT=held2, e.g. with `make bench-diagnosis`) leaves
out a split entirely: not captured, not compared, not shown, so whoever tunes the judgement can
run the rest of the suite without seeing the held-out set. --split keeps only the given splits.
--capture-only makes the captures and checks the truths (check_truth) without any compare.
With no option every pair runs, held2 included.
The third held-out set (split held3) is invisible by default: its pairs exist only when the
environment has BENCH_DIAGNOSIS_HELD3=1 (suite.py), e.g. to score it once, after the judgement is
frozen: BENCH_DIAGNOSIS_HELD3=1 bench_diagnosis.py --split held3 --jobs 1.
The fourth (split held4: fp32 vs bf16, another CPU generation, a later step) likewise needs
BENCH_DIAGNOSIS_HELD4=1; its summary adds a line per regime.
"""
import argparse
import concurrent.futures as cf
import hashlib
import json
import os
import pathlib
import shutil
import subprocess
import sys

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE))
import suite  # noqa: E402

REFERENCE_BLAS = "/usr/lib/x86_64-linux-gnu/blas"
# held4 "oldcpu": the same software as on an older CPU generation (issue 30): ATen's kernels
# without AVX2/AVX-512, oneDNN limited to SSE4.1, OpenBLAS's Prescott kernels. The golden keeps
# the machine's environment (which may set OPENBLAS_CORETYPE already).
OLD_CPU_ENV = {"ATEN_CPU_CAPABILITY": "default", "ONEDNN_MAX_CPU_ISA": "SSE41",
               "OPENBLAS_CORETYPE": "Prescott"}
MODES = ("statistics", "md5", "tensor")


def run_key(model, mode, steps, opts, env, rep=0):
    parts = [model, mode, f"s{steps}"] + [f"{k}={v}" for k, v in sorted(opts.items())]
    if env:
        parts.append(env)
    if rep:
        parts.append(f"rep{rep}")
    return "_".join(str(p) for p in parts).replace("=", "-")


def capture_fingerprint(pythonpath):
    """What a cached capture depends on: the suite's model and runner code and the numprobe
    extension that dumped it. A cached dump with another fingerprint is captured again."""
    h = hashlib.sha256()
    for f in ("models.py", "run_one.py"):
        h.update((HERE / f).read_bytes())
    for so in sorted((pythonpath / "numprobe").glob("_C*.so")):
        st = so.stat()
        h.update(f"{so.name}:{st.st_size}:{st.st_mtime_ns}".encode())
    return h.hexdigest()


class Runs:
    """Captures to make, deduplicated (goldens are shared between faults of a model)."""

    def __init__(self, work, pythonpath, recapture):
        self.work, self.pythonpath, self.recapture = work, pythonpath, recapture
        self.todo = {}
        self.fingerprint = capture_fingerprint(pythonpath)

    def want(self, model, mode, steps, opts, env="", rep=0):
        key = run_key(model, mode, steps, opts, env, rep)
        self.todo[key] = (model, mode, steps, dict(opts), env)
        return self.work / "dumps" / key

    def make(self, jobs):
        def one(item):
            key, (model, mode, steps, opts, env) = item
            out = self.work / "dumps" / key
            done = out / "done"
            if not self.recapture and done.exists() and done.read_text() == self.fingerprint:
                return key, None
            shutil.rmtree(out, ignore_errors=True)
            cmd = [sys.executable, str(HERE / "run_one.py"), "--model", model, "--mode", mode,
                   "--out", str(out / "dump"), "--steps", str(steps)]
            for k, v in opts.items():
                if k == "fault":
                    cmd += ["--fault", v]
                elif v is True:
                    cmd.append(f"--{k}")
                elif v is not False:
                    cmd += [f"--{k}", str(v)]
            e = dict(os.environ, PYTHONPATH=str(self.pythonpath))
            if env == "blas":
                e["LD_LIBRARY_PATH"] = REFERENCE_BLAS
            elif env == "oldcpu":
                e.update(OLD_CPU_ENV)
            elif env:
                return key, f"unknown environment {env!r}"
            p = subprocess.run(cmd, env=e, capture_output=True, text=True)
            if p.returncode != 0:
                return key, f"{' '.join(cmd)}\n{p.stdout}\n{p.stderr}"
            (out / "done").write_text(self.fingerprint)
            return key, None

        todo = sorted(self.todo.items())
        with cf.ThreadPoolExecutor(jobs) as ex:
            for n, (key, err) in enumerate(ex.map(one, todo), 1):
                if err:
                    raise SystemExit(f"capture failed: {err}")
                print(f"\r  captures {n}/{len(todo)}", end="", file=sys.stderr, flush=True)
        print(file=sys.stderr)


def compare(cli, target, golden, out):
    shutil.rmtree(out, ignore_errors=True)
    p = subprocess.run([str(cli), "compare", "-t", str(target / "dump"), "-g", str(golden / "dump"),
                        "-o", str(out)], capture_output=True, text=True)
    summary = out / "summary.json"
    if not summary.exists():
        raise SystemExit(f"compare failed ({p.returncode}): {p.stdout}\n{p.stderr}")
    with open(summary) as f:
        return json.load(f)


def answers(summary):
    """(step, [suspect entries, best first], reason of the top one, regime) of the earliest step
    with a divergence; (None, [], None, regime) when every step is clean."""
    regime = None
    for p in sorted(summary["pairs"], key=lambda p: (p["step"], p["rank"])):
        regime = regime or p.get("regime")
        fd = p.get("first_divergence")
        if not fd:
            continue
        suspects = p.get("suspects") or [fd]
        return p["step"], [s["entry"] for s in suspects], fd.get("reason"), p.get("regime")
    return None, [], None, regime


def entries_of(dump_root, step):
    names = set()
    for d in (dump_root / "dump" / f"step{step}").glob("*/dump.json"):
        with open(d) as f:
            names.update(json.load(f)["data"])
    return names


def check_truth(fault, target, golden):
    """Every fault must name at least one entry that the runs really have: a typo in the suite
    would otherwise count as a miss forever."""
    have = entries_of(target, fault.step) | entries_of(golden, fault.step)
    if not any(a in have for a in fault.accept):
        raise SystemExit(f"suite error: none of {fault.name}'s accepted entries {fault.accept} "
                         f"is in its dumps (step {fault.step})")
    missing = [a for a in fault.accept if a not in have]
    if missing and fault.split in ("held", "held2", "held3", "held4"):
        print(f"note: {fault.name}: accepted entries in neither dump: {', '.join(missing)}",
              file=sys.stderr)


def short(entry):
    return entry.replace("Functional.", "F.").replace("Module.", "M.").replace(".forward", ".fwd") \
        .replace(".backward", ".bwd") if entry else "-"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--work", default=str(ROOT / "build" / "bench_diagnosis"))
    ap.add_argument("--cli", default=str(ROOT / "build" / "bin" / "numprobe"))
    ap.add_argument("--pythonpath", default=str(ROOT / "python"))
    ap.add_argument("--modes", default=",".join(MODES))
    ap.add_argument("--only", default="")
    ap.add_argument("--recapture", action="store_true")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--json", default="")
    ap.add_argument("--split", default="", help="only these splits (comma-separated)")
    ap.add_argument("--skip-split", default=os.environ.get("BENCH_DIAGNOSIS_SKIP_SPLIT", ""),
                    help="leave these splits out (default: $BENCH_DIAGNOSIS_SKIP_SPLIT)")
    ap.add_argument("--capture-only", action="store_true",
                    help="capture and check the truths; no compare, no scores")
    a = ap.parse_args()
    work = pathlib.Path(a.work)
    modes = a.modes.split(",")
    only = set(filter(None, a.only.split(",")))
    faults = [f for f in suite.FAULTS if not only or f.name in only]
    noise = [n for n in suite.NOISE if not only or n.name in only]
    keep = set(filter(None, a.split.split(",")))
    skip = set(filter(None, a.skip_split.split(",")))
    faults = [f for f in faults if (not keep or f.split in keep) and f.split not in skip]
    noise = [n for n in noise if (not keep or n.split in keep) and n.split not in skip]
    if skip:
        print(f"note: leaving out split(s) {', '.join(sorted(skip))}", file=sys.stderr)
    for h in ("held3", "held4"):
        if h in keep and os.environ.get(f"BENCH_DIAGNOSIS_{h.upper()}") != "1":
            print(f"note: split {h} is left out unless BENCH_DIAGNOSIS_{h.upper()}=1",
                  file=sys.stderr)
    if not os.path.isdir(REFERENCE_BLAS):
        skipped = [n.name for n in noise if n.env == "blas"]
        noise = [n for n in noise if n.env != "blas"]
        if skipped:
            print(f"note: {REFERENCE_BLAS} missing (Debian package libblas3): skipping "
                  f"{', '.join(skipped)}", file=sys.stderr)

    runs = Runs(work, pathlib.Path(a.pythonpath).resolve(), a.recapture)
    plan = []  # (pair, mode, target dir, golden dir)
    for mode in modes:
        for f in faults:
            g = runs.want(f.model, mode, f.steps, f.golden)
            t = runs.want(f.model, mode, f.steps, dict(f.target, fault=f.name), f.env)
            plan.append((f, mode, t, g))
        for n in noise:
            g = runs.want(n.model, mode, n.steps, n.golden)
            same = n.golden == n.target and not n.env
            t = runs.want(n.model, mode, n.steps, n.target, n.env, rep=1 if same else 0)
            plan.append((n, mode, t, g))
    runs.make(a.jobs)
    if a.capture_only:
        for pair, mode, t, g in plan:
            if isinstance(pair, suite.Fault) and mode == modes[0]:
                check_truth(pair, t, g)
        print(f"captured {len(runs.todo)} runs for {len(faults)} faults and {len(noise)} noise "
              f"pairs; every fault's truth names an entry of its dumps (no compare run)")
        return

    results = {}
    for pair, mode, t, g in plan:
        if isinstance(pair, suite.Fault) and mode == "statistics":
            check_truth(pair, t, g)
        s = compare(a.cli, t, g, work / "compare" / f"{pair.name}_{mode}")
        step, sus, reason, regime = answers(s)
        r = {"step": step, "suspects": sus[:5], "reason": reason, "regime": regime}
        if isinstance(pair, suite.Fault):
            ok = [e in pair.accept for e in sus]
            r["top1"] = bool(ok[:1] and ok[0] and step == pair.step)
            r["top3"] = any(ok[:3]) and step == pair.step
        else:
            r["alarm"] = step is not None
        results[(pair.name, mode)] = r

    # ---- the table ---------------------------------------------------------------------------
    w = 44
    print(f"\n{'pair':<29} {'kind':<10} {'split':<5} " + " ".join(f"{m:<{w}}" for m in modes))
    for pair in faults + noise:
        if isinstance(pair, suite.Fault):
            head = f"{pair.name:<29} {pair.kind:<10} {pair.split:<5} "
        else:
            head = f"{pair.name:<29} {'noise':<10} {pair.split:<5} "
        cells = []
        for m in modes:
            r = results[(pair.name, m)]
            top = r["suspects"][0] if r["suspects"] else None
            if isinstance(pair, suite.Fault):
                mark = "ok " if r["top1"] else ("top3" if r["top3"] else "MISS")
            else:
                mark = "ALARM" if r["alarm"] else "ok "
            text = f"{mark} {short(top)}" + (f" ({r['reason']})" if r["reason"] else "")
            cells.append(f"{text[:w]:<{w}}")
        print(head + " ".join(cells))

    print()
    for m in modes:
        line = [f"{m:<10}"]
        for split in ("all", "tune", "eval", "held", "held2", "held3", "held4"):
            fs = [f for f in faults if split == "all" or f.split == split]
            if not fs:
                continue
            t1 = sum(results[(f.name, m)]["top1"] for f in fs)
            t3 = sum(results[(f.name, m)]["top3"] for f in fs)
            line.append(f"{split}: top-1 {t1}/{len(fs)} ({100 * t1 / len(fs):.0f}%) "
                        f"top-3 {t3}/{len(fs)} ({100 * t3 / len(fs):.0f}%)")
        alarms = [n.name for n in noise if results[(n.name, m)]["alarm"]]
        line.append(f"false alarms {len(alarms)}/{len(noise)}"
                    + (f" ({', '.join(alarms)})" if alarms else "")
                    + "".join(f", {split} {sum(n.name in alarms for n in ns)}/{len(ns)}"
                              for split in ("late", "held", "held2", "held3", "held4")
                              for ns in [[n for n in noise if n.split == split]] if ns))
        print(" | ".join(line))
        # held4: one line per regime (fp32 vs bf16, another CPU generation, a later step)
        for regime in ("bf16", "oldcpu", "step"):
            fs = [f for f in faults if f.regime == regime]
            ns = [n for n in noise if n.regime == regime]
            if not fs and not ns:
                continue
            t1 = sum(results[(f.name, m)]["top1"] for f in fs)
            t3 = sum(results[(f.name, m)]["top3"] for f in fs)
            al = sum(results[(n.name, m)]["alarm"] for n in ns)
            print(f"{'':<10} regime {regime}: top-1 {t1}/{len(fs)} top-3 {t3}/{len(fs)} | "
                  f"false alarms {al}/{len(ns)}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({f"{k[0]}/{k[1]}": v for k, v in results.items()}, f, indent=1)


if __name__ == "__main__":
    main()
