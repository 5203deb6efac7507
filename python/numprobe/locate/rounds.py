"""The rounds: each runs both commands under a config of its own, compares, and says what the
next round looks at (docs/locate.md)."""
import csv
import glob
import os
import time

from . import dumps
from .configs import forward_call, round_config, write_config
from .runs import run_command, run_numprobe


class RoundError(Exception):
    """A round that could not finish (a compare that wrote nothing, an empty dump): the report is
    still written, with what the earlier rounds found."""


class Locator:
    def __init__(self, golden, target, out, steps, progress):
        self.golden, self.target, self.out, self.steps = golden, target, out, steps
        self.progress = progress
        self.rounds = []  # what the report shows, one dict per round
        self.rank = None  # the rank the rounds follow (multi-rank: compare's origin)

    # ---- plumbing ----------------------------------------------------------------------------
    def _dir(self, k):
        d = os.path.join(self.out, f"round{k}")
        os.makedirs(d, exist_ok=True)
        return d

    def _run(self, k, side, command, cfg, label):
        """One run of a command with NUMPROBE_CONFIG pointing at cfg; returns its record."""
        d = self._dir(k)
        cfg_path = write_config(os.path.join(d, f"{side}.config.json"), cfg)
        self.progress.begin(k, f"{label}: {side} run")
        seconds = run_command(command, os.path.join(d, f"{side}.log"),
                              {"NUMPROBE_CONFIG": cfg_path}, f"round {k} {side} run")
        self.progress.end(seconds)
        return {"side": side, "command": command, "config": cfg, "config_path": cfg_path,
                "seconds": round(seconds, 3), "dump": cfg["dump_path"]}

    def _pair(self, k, label, task, level, scope=None, names=None, data_mode=None):
        d = self._dir(k)
        ranks = [self.rank] if self.rank is not None else None
        runs = []
        for side, command in (("golden", self.golden), ("target", self.target)):
            cfg = round_config(os.path.abspath(os.path.join(d, side)), self.steps, task, level,
                               scope, names, ranks, data_mode=data_mode)
            runs.append(self._run(k, side, command, cfg, label))
        return runs

    def _compare(self, k, golden_dump, target_dump, name="compare"):
        """numprobe compare; returns (summary dict, output dir, seconds)."""
        d = os.path.join(self._dir(k), name)
        self.progress.begin(k, f"numprobe {name}")
        code, seconds = run_numprobe(["compare", "-t", target_dump, "-g", golden_dump, "-o", d],
                                     os.path.join(self._dir(k), f"{name}.log"),
                                     f"round {k} numprobe compare", ok_codes=(0, 1))
        self.progress.end(seconds)
        summary_path = os.path.join(d, "summary.json")
        if not os.path.exists(summary_path):
            raise RoundError(f"round {k}: compare wrote no {summary_path} "
                             f"({_last_line(d + '.log')})")
        return dumps.load_json(summary_path), d, seconds

    def _record(self, k, title, runs, summary=None, compare_dir=None, finding=None, next_step=None,
                seconds=0.0, extra=None):
        rec = {"round": k, "title": title, "runs": runs, "compare_dir": compare_dir,
               "summary": _summary_digest(summary) if summary else None, "finding": finding,
               "next": next_step,
               "seconds": round(seconds + sum(r["seconds"] for r in runs), 3)}
        rec.update(extra or {})
        self.rounds.append(rec)
        return rec

    def _follow(self, summary):
        pair = dumps.choose_pair(summary)
        if pair is not None and pair["rank"] is not None and pair["rank"] >= 0 and \
                len(summary.get("pairs", [])) > 1:
            self.rank = pair["rank"]
        return pair

    # ---- round 0: preflight ------------------------------------------------------------------
    def preflight(self, check_repro):
        k = 0
        t0 = time.monotonic()
        runs = self._pair(k, "preflight (structure)", "structure", "mix")
        g, t = runs[0]["dump"], runs[1]["dump"]
        env = dumps.environment_differences(g, t)
        structure = dumps.structural_differences(g, t)
        extra = {"environment_differences": env, "structural_differences": structure}
        repro = None
        if check_repro:
            d = self._dir(k)
            repro_runs = []
            for side in ("golden_repro_a", "golden_repro_b"):
                cfg = round_config(os.path.abspath(os.path.join(d, side)), self.steps,
                                   "statistics", "L0")
                repro_runs.append(self._run(k, side, self.golden, cfg, "reproducibility"))
            summary, cdir, _ = self._compare(k, repro_runs[0]["dump"], repro_runs[1]["dump"],
                                             "repro_compare")
            pair = dumps.choose_pair(summary)
            repro = {"reproducible": pair is None, "runs": repro_runs, "compare_dir": cdir,
                     "first_divergence": pair["first_divergence"] if pair else None}
            runs += repro_runs
            extra["reproducibility"] = repro
        finding = {"environment_differences": len(env), "structural_differences": len(structure),
                   "reproducible": None if repro is None else repro["reproducible"]}
        self._record(k, "preflight: structure, environment" +
                     (", reproducibility" if check_repro else ""), runs, finding=finding,
                     seconds=time.monotonic() - t0 - sum(r["seconds"] for r in runs), extra=extra)
        return repro

    # ---- round 1: modules --------------------------------------------------------------------
    def modules(self):
        k = 1
        runs = self._pair(k, "L0 statistics", "statistics", "L0")
        summary, cdir, sec = self._compare(k, runs[0]["dump"], runs[1]["dump"])
        pair = self._follow(summary)
        fd = pair["first_divergence"] if pair else None
        module = forward_call(fd["entry"]) if fd and fd["entry"].startswith("Module.") else None
        why = ""
        if module and fd["reason"] in ("inputs_already_differ", "parameters_differ"):
            # An input no module made differs: it changed in code L0 does not see (a functional
            # call in the parent's forward: at L0 such an activation, requiring grad, even reads as
            # a parameter), or it is the module's own weight. The parent's mix dump holds both the
            # op that changed it and the module's own APIs.
            parent = fd.get("module")
            why = f" ({module} got an input no module made: its parent is searched)"
            module = forward_call(parent) if parent else None
        if module:
            nxt = f"mix statistics inside {module}{why}"
        else:
            nxt = f"no module to search{why}: mix statistics over the whole step"
        self._record(k, "L0 statistics: the first divergent module", runs, summary, cdir,
                     finding=_finding(pair), next_step=nxt, seconds=sec)
        return module

    # ---- round 2: APIs inside the module -----------------------------------------------------
    def apis(self, module):
        k = 2
        scope = [module, module] if module else None
        runs = self._pair(k, "mix statistics" + (f" in {module}" if module else ""),
                          "statistics", "mix", scope=scope)
        summary, cdir, sec = self._compare(k, runs[0]["dump"], runs[1]["dump"])
        pair = self._follow(summary)
        fd = pair["first_divergence"] if pair else None
        api = fd["entry"] if fd and not fd["entry"].startswith("Module.") else None
        neighbours = []
        if api:
            neighbours = _neighbours(dumps.entries(os.path.dirname(pair["target"])),
                                     forward_call(api))
        nxt = (f"tensor dump of {forward_call(api)} and its neighbours {neighbours}" if api else
               "no API inside diverged: the module itself is the answer")
        rec = self._record(k, "mix statistics: the first divergent API", runs, summary, cdir,
                           finding=_finding(pair), next_step=nxt, seconds=sec)
        rec["neighbours"] = neighbours
        return pair, api, neighbours, scope

    # ---- round 3: tensors --------------------------------------------------------------------
    def tensors(self, api, neighbours, scope):
        k = 3
        names = [forward_call(api)] + neighbours
        # A forward divergence needs forward tensors only (half the bytes); a backward one both.
        data_mode = None if api.endswith(".backward") else ["forward"]
        runs = self._pair(k, f"tensor dump of {len(names)} APIs", "tensor", "mix" if scope else "L1",
                          scope=scope, names=names, data_mode=data_mode)
        summary, cdir, sec = self._compare(k, runs[0]["dump"], runs[1]["dump"])
        pair = self._follow(summary) or _pair_of(summary, self.rank)
        evidence = _tensor_evidence(cdir, pair, api) if pair else []
        self._record(k, "tensor task: tensor-level evidence", runs, summary, cdir,
                     finding=_finding(pair) if pair and pair.get("first_divergence") else None,
                     next_step=f"acc-check of {forward_call(api)} on its recorded inputs",
                     seconds=sec, extra={"tensor_evidence": evidence})
        return pair

    # ---- round 4: the API on its recorded inputs ---------------------------------------------
    def acc_check(self, api, pair):
        k = 4
        d = self._dir(k)
        call = forward_call(api)
        direction = "backward" if api.endswith(".backward") else "forward"
        self.progress.begin(k, f"acc-check --offline of {call}")
        code, seconds = run_numprobe(
            ["acc-check", "-api_info", pair["target"], "-o", os.path.join(d, "acc_check"),
             "--offline"], os.path.join(d, "acc_check.log"), "round 4 acc-check", ok_codes=(0, 1))
        self.progress.end(seconds)
        result = _acc_result(os.path.join(d, "acc_check"), call, direction)
        if result is None:
            verdict = "not checked (acc-check did not replay it)"
        elif result in ("pass", "warning"):
            verdict = ("the API computes correctly on its recorded inputs and arguments: "
                       "its inputs or arguments are already off")
        else:
            verdict = "the API itself is wrong on the target (kernel bug): it fails on its own inputs"
        self._record(k, "acc-check: the API on its recorded inputs", [], finding={
            "api": call, "direction": direction, "acc_check_result": result, "verdict": verdict},
            seconds=seconds, extra={"acc_check_dir": os.path.join(d, "acc_check")})
        return result, verdict


def _last_line(path):
    """The last non-empty line of a log (what numprobe said last), or where the log is."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            lines = [ln.strip() for ln in f if ln.strip()]
        return lines[-1] if lines else f"see {path}"
    except OSError:
        return f"see {path}"


def _neighbours(entries, call, width=1):
    """The API calls just before and after `call` in execution order (forward entries)."""
    calls = []
    for e in entries:
        if e.startswith("Module.") or not e.endswith(".forward"):
            continue
        c = forward_call(e)
        if c not in calls:
            calls.append(c)
    if call not in calls:
        return []
    i = calls.index(call)
    return calls[max(0, i - width):i] + calls[i + 1:i + 1 + width]


def _pair_of(summary, rank):
    for p in summary.get("pairs", []):
        if rank is None or p["rank"] == rank:
            return p
    return None


def _finding(pair):
    if not pair or not pair.get("first_divergence"):
        return None
    fd = pair["first_divergence"]
    keep = ("entry", "direction", "module", "reason", "source", "op_class", "regime",
            "input_discrepancy", "output_discrepancy", "tolerance", "score")
    out = {k: fd.get(k) for k in keep}
    out.update({"step": pair["step"], "rank": pair["rank"],
                "next_suspects": [s["entry"] for s in pair.get("suspects", [])[1:3]]})
    return out


def _summary_digest(summary):
    pairs = [{k: p.get(k) for k in ("step", "rank", "rows", "matched", "pass", "warning", "error",
                                    "unmatched_target", "unmatched_golden", "coverage", "regime")}
             | {"first_divergence": (p.get("first_divergence") or {}).get("entry")}
             for p in summary.get("pairs", [])]
    return {"mode": summary.get("mode"), "coverage": summary.get("coverage"), "pairs": pairs,
            "origins": summary.get("origins", []), "problems": summary.get("problems", [])}


_TENSOR_COLUMNS = ("NPU Name", "Bench Name", "NPU Tensor Shape", "Cosine", "MaxAbsErr",
                   "MaxRelativeErr", "One Thousandth Err Ratio", "Five Thousandths Err Ratio",
                   "Status", "Reason")


def _tensor_evidence(compare_dir, pair, api):
    """The compare rows of the suspect API's call (both directions) with the tensor metrics, and
    where in its first differing output the largest difference sits."""
    call = forward_call(api)
    rows = []
    pattern = os.path.join(compare_dir, f"compare_result_step{pair['step']}_*.csv")
    for path in sorted(glob.glob(pattern)):
        with open(path, encoding="utf-8", newline="") as f:
            for row in csv.DictReader(f):
                name = row.get("NPU Name", "")
                if name.startswith(call + "."):
                    rows.append({k: row[k] for k in _TENSOR_COLUMNS if k in row})
    where = _largest_difference(pair, call, api.endswith(".backward"))
    return {"rows": rows, "largest_difference": where}


def _largest_difference(pair, call, backward):
    """Index, values and absolute difference of the largest element difference in the suspect's
    first output whose tensors differ, read from both runs' .npy files."""
    try:
        import numpy as np
    except ImportError:
        return None
    entry = f"{call}.{'backward' if backward else 'forward'}"
    sides = []
    for dump_json in (pair["target"], pair["golden"]):
        data = dumps.load_json(dump_json).get("data", {})
        if entry not in data:
            return None
        tensors = dumps.tensors_of(data[entry], "output")
        sides.append([os.path.join(os.path.dirname(dump_json), "dump_tensor_data", t["data_name"])
                      for t in tensors])
    for i, (t_file, g_file) in enumerate(zip(*sides)):
        if not (os.path.exists(t_file) and os.path.exists(g_file)):
            continue
        a, b = np.load(t_file).astype(np.float64), np.load(g_file).astype(np.float64)
        if a.shape != b.shape:
            return {"output": i, "shape_target": list(a.shape), "shape_golden": list(b.shape)}
        diff = np.abs(a - b)
        if diff.size == 0 or not np.any(diff > 0):
            continue
        flat = int(np.nanargmax(diff))
        idx = [int(x) for x in np.unravel_index(flat, a.shape)]
        return {"output": i, "index": idx, "target": float(a.flat[flat]),
                "golden": float(b.flat[flat]), "abs_diff": float(diff.flat[flat]),
                "elements_differing": int(np.count_nonzero(diff)), "elements": int(diff.size)}
    return None


def _acc_result(acc_dir, call, direction):
    """acc-check's Forward/Backward Test Success for the call ("pass", "warning", "error", ...),
    None when the result file does not list it."""
    column = "Forward Test Success" if direction == "forward" else "Backward Test Success"
    for path in sorted(glob.glob(os.path.join(acc_dir, "accuracy_checking_result_*.csv"))):
        with open(path, encoding="utf-8", newline="") as f:
            for row in csv.DictReader(f):
                name = row.get("API name") or row.get("API Name") or ""
                if name == call or name.startswith(call + "."):
                    return (row.get(column) or "").strip() or None
    return None
