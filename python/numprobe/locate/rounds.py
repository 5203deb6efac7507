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
        self.golden, self.target, self.out, self.steps = golden, target, out, list(steps)
        self.steps_given = list(steps)
        # Round 1 saw every step before the one the later rounds capture agree bit for bit.
        self.prior_bitwise = False
        self.round1_pair, self.round1_bitwise = None, False  # what round 1 found
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

    def _pair(self, k, label, task, level, scope=None, names=None, data_mode=None,
              summary_mode="statistics"):
        d = self._dir(k)
        ranks = [self.rank] if self.rank is not None else None
        runs = []
        for side, command in (("golden", self.golden), ("target", self.target)):
            cfg = round_config(os.path.abspath(os.path.join(d, side)), self.steps, task, level,
                               scope, names, ranks, summary_mode=summary_mode,
                               data_mode=data_mode)
            runs.append(self._run(k, side, command, cfg, label))
        return runs

    def _compare(self, k, golden_dump, target_dump, name="compare"):
        """numprobe compare; returns (summary dict, output dir, seconds)."""
        d = os.path.join(self._dir(k), name)
        self.progress.begin(k, f"numprobe {name}")
        prior = ["--prior-steps", "bitwise"] if self.prior_bitwise else []
        code, seconds = run_numprobe(["compare", "-t", target_dump, "-g", golden_dump, "-o", d]
                                     + prior,
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
    def modules(self, follow_steps=0):
        """L0 statistics of the given steps and the `follow_steps` after them: a fault whose first
        effect is the next step's parameters (an optimizer setting, a gradient changed after
        backward) leaves the given step bitwise equal and is followed into the first step that
        parts. Returns (module to search, or None for the whole step; summary mode of round 2)."""
        k = 1
        last = max(self.steps)
        self.steps = sorted(set(self.steps) | set(range(last + 1, last + 1 + follow_steps)))
        runs = self._pair(k, "L0 statistics", "statistics", "L0")
        summary, cdir, sec = self._compare(k, runs[0]["dump"], runs[1]["dump"])
        pair = self._follow(summary)
        self.round1_pair, self.round1_bitwise = pair, _bitwise(summary)
        fd = pair["first_divergence"] if pair else None
        module, why = None, ""
        if pair is not None:
            # The later rounds capture the step where the runs part first, and that step alone;
            # compare then knows whether the steps before it agreed bit for bit in this round.
            earlier = [p for p in summary.get("pairs", []) if p.get("step", 0) < pair["step"]]
            self.prior_bitwise = bool(earlier) and all(
                p.get("regime") in (None, "bitwise") and not p.get("first_divergence")
                for p in earlier)
            self.steps = [pair["step"]]
            if pair["step"] != min(self.steps_given):
                why = (f" (steps {_steps_text(self.steps_given)} agree; the runs part first in "
                       f"step {pair['step']})")
        mode = "statistics"
        if fd and fd["entry"].startswith("Module."):
            module, scope_why = _module_scope(fd, os.path.dirname(pair["golden"]),
                                              os.path.dirname(pair["target"]))
            why += scope_why
        elif fd is None and self.round1_bitwise:
            # Modules agree bit for bit in every captured step: a difference the statistics of
            # whole modules hide (a mask, a permutation) or one in code outside every module.
            # While the runs are bitwise, md5 names the first op whose bits differ (docs/compare.md).
            mode = "md5"
            why = " (every module agrees bit for bit: CRCs of every API)"
        if module:
            nxt = f"mix statistics inside {module}{why}"
        else:
            nxt = (f"the root scope: mix {'md5' if mode == 'md5' else 'statistics'} over the "
                   f"whole step, the calls outside every module and the loss included{why}")
        self._record(k, "L0 statistics: the first divergent module", runs, summary, cdir,
                     finding=_finding(pair), next_step=nxt, seconds=sec)
        return module, mode

    # ---- round 2: APIs inside the module -----------------------------------------------------
    def apis(self, module, mode="statistics"):
        """Round 2. When round 1 saw a module part while the runs were still bitwise, and none of
        the statistics inside it part beyond noise, the change moved statistics too little to be
        judged (a boolean mask with one more True): the search is repeated once over the root
        scope with md5 (round "2b", a run pair more), where the first op whose bits differ is
        named. Nothing found: round 1's pair stands (its module is the answer)."""
        pair, api, neighbours, scope = self._search(2, module, mode)
        if pair is None and self.round1_pair is not None and self.round1_bitwise and \
                mode != "md5":
            self.rounds[-1]["next"] = ("nothing parts beyond noise inside it although round 1's "
                                       "module did, bit for bit: md5 over the root scope")
            pair, api, neighbours, scope = self._search("2b", None, "md5")
        if pair is None and self.round1_pair is not None:
            self.rounds[-1]["next"] = "no API parts: round 1's module is the answer"
            return self.round1_pair, None, [], scope
        return pair, api, neighbours, scope

    def hidden_input(self, fd):
        """Round 2 judged the API's inputs equal by their statistics and its outputs different,
        and round 3's tensors (compare's rows of that call) show one of its forward inputs
        differs: equal statistics are not equal values (a permutation, a flip of channels keeps
        them). The change is upstream of the API, possibly outside the module searched: True
        when a search of the root scope with md5 is due. Only while round 1 was bitwise (md5
        names the first change of bits)."""
        if not (self.round1_bitwise and fd.get("reason") == "outputs_diverge" and
                not fd.get("input_discrepancy")):
            return False
        rows = (self.rounds[-1].get("tensor_evidence") or {}).get("rows", [])
        prefix = forward_call(fd["entry"]) + ".forward.input"
        for row in rows:
            try:
                differs = float(row.get("MaxAbsErr") or 0) > 0
            except ValueError:  # "nan", "N/A": no evidence either way
                differs = False
            if row.get("NPU Name", "").startswith(prefix) and differs:
                return True
        return False

    def research_root(self, k):
        """md5 over the root scope after a hidden input change (see hidden_input)."""
        self.rounds[-1]["next"] = ("an input of the API that round 2's statistics judged equal "
                                   f"differs in these tensors: md5 over the root scope (round {k})")
        return self._search(k, None, "md5")

    def _search(self, k, module, mode):
        scope = [module, module] if module else None
        runs = self._pair(k, f"mix {mode}" + (f" in {module}" if module else " (root scope)"),
                          "statistics", "mix", scope=scope, summary_mode=mode)
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
        rec = self._record(k, f"mix {mode}: the first divergent API", runs, summary, cdir,
                           finding=_finding(pair), next_step=nxt, seconds=sec)
        rec["neighbours"] = neighbours
        return pair, api, neighbours, scope

    # ---- round 3: tensors --------------------------------------------------------------------
    def tensors(self, api, neighbours, scope, k=3):
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
    def acc_check(self, api, pair, k=4):
        d = self._dir(k)
        call = forward_call(api)
        direction = "backward" if api.endswith(".backward") else "forward"
        self.progress.begin(k, f"acc-check --offline of {call}")
        code, seconds = run_numprobe(
            ["acc-check", "-api_info", pair["target"], "-o", os.path.join(d, "acc_check"),
             "--offline"], os.path.join(d, "acc_check.log"), f"round {k} acc-check",
            ok_codes=(0, 1))
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


def _steps_text(steps):
    return ",".join(str(s) for s in steps)


def _bitwise(summary):
    """Every compared pair still in compare's bitwise regime (no reduction-order noise seen)."""
    pairs = summary.get("pairs", [])
    return bool(pairs) and all(p.get("regime") in (None, "bitwise") for p in pairs)


def _module_scope(fd, golden_dir, target_dir):
    """Where round 2 searches for the first divergent module `fd` of round 1: (call, why); call
    None is the root scope (the whole step: code outside every module, the loss, the batch).
    - the module's own computation or its parameters differ: the module itself;
    - an input differs that no module made (compare: inputs_already_differ / parameters_differ on
      an input row; a parameter gradient whose module's backward received a gradient that already
      differed, or whose backward is not recorded): the change happened in code between modules.
      The innermost enclosing module whose own inputs (in backward: the gradients it received)
      agree in both runs holds that code; when every enclosing module's inputs differ too (or
      there is none), it is the root's own code, the loss or the batch: the root scope."""
    entry = fd["entry"]
    module = forward_call(entry)
    if ".parameters_grad." in entry:
        # A parameter's gradient differs: made by the module's own backward, unless the gradient
        # that backward received already differed (then it is the case below, from there).
        if dumps.inputs_equal(golden_dir, target_dir, entry.replace(".parameters_grad.",
                                                                    ".backward.")):
            return module, ""
    elif fd["reason"] not in ("inputs_already_differ", "parameters_differ") or \
            ".parameters." in (fd.get("row") or ""):
        return module, ""
    backward = fd.get("direction") != "forward"
    parents = dumps.construct(target_dir)
    forward = entry.replace(".parameters_grad.", ".forward.").replace(".backward.", ".forward.")
    ancestor = parents.get(forward)  # the enclosing modules, by their forward calls
    while ancestor:
        seen = ancestor.replace(".forward.", ".backward.") if backward else ancestor
        if dumps.inputs_equal(golden_dir, target_dir, seen):
            return ancestor, (f" ({module} got {'a gradient' if backward else 'an input'} no "
                              f"module made; {ancestor}'s own inputs agree: it is searched)")
        ancestor = parents.get(ancestor)
    return None, (f" ({module} got {'a gradient' if backward else 'an input'} no module made, "
                  "and so did every module around it)")


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
        try:
            a, b = np.load(t_file).astype(np.float64), np.load(g_file).astype(np.float64)
        except (ValueError, TypeError):  # a dtype numpy cannot read (bfloat16): no location
            continue
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
