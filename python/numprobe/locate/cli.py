"""numprobe locate --golden CMD --target CMD -o OUT [--steps 0] [--follow-steps 2] [--budget-minutes N] [--check-repro]

Exit status: 0 located (or no divergence found), 1 bad input, 2 the time budget ran out before
the answer was certain, 3 the golden command does not reproduce itself (--check-repro), and a
failing run's own exit code when one of the commands fails; 1 also when a round cannot finish
before any answer (the report says which)."""
import argparse
import os
import shutil
import sys
import time

from . import dumps
from .configs import forward_call
from .report import bytes_under, write_reports
from .rounds import Locator, RoundError
from .runs import Progress, RunFailed

MARKER = ".numprobe_locate"


class BudgetExhausted(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # bad input exits 1 (2 means: the budget ran out)
        self.print_usage(sys.stderr)
        self.exit(1, f"{self.prog}: error: {message}\n")


def parse_args(argv):
    ap = _Parser(prog="numprobe locate", description=__doc__.split("\n")[0])
    ap.add_argument("--golden", required=True, help="shell command of the reference training")
    ap.add_argument("--target", required=True, help="shell command of the training to debug")
    ap.add_argument("-o", "--output", required=True, help="output directory (new, or a previous "
                    "locate's: only its rounds and reports are replaced)")
    ap.add_argument("--steps", default="0", help="step(s) to capture, e.g. 0 or 0,1 (default 0)")
    ap.add_argument("--follow-steps", type=int, default=2,
                    help="round 1 also captures this many steps after the last of --steps, so a "
                    "fault first visible in a later step (an optimizer setting) is followed "
                    "there (default 2; 0: the given steps only)")
    ap.add_argument("--budget-minutes", type=float, default=None,
                    help="stop before a round that would start after this many minutes")
    ap.add_argument("--check-repro", action="store_true",
                    help="round 0 also runs the golden command twice and compares the two")
    args = ap.parse_args(argv)
    try:
        args.steps = [int(s) for s in str(args.steps).split(",") if s.strip()]
    except ValueError:
        ap.error(f"--steps: {args.steps!r} is not a comma-separated list of step numbers")
    if not args.steps or min(args.steps) < 0:
        ap.error("--steps: give one or more steps >= 0")
    if args.follow_steps < 0:
        ap.error("--follow-steps: give a number >= 0")
    return args


def prepare_output(out):
    """Makes `out`; an existing one must be empty or a previous locate's (marker file), whose
    round directories and reports alone are removed. Nothing outside `out` is ever deleted."""
    if os.path.exists(out) and not os.path.isdir(out):
        raise SystemExit(f"numprobe locate: error: {out}: exists and is not a directory")
    if os.path.isdir(out) and os.listdir(out) and not os.path.exists(os.path.join(out, MARKER)):
        raise SystemExit(f"numprobe locate: error: {out}: directory is not empty and was not "
                         "written by numprobe locate; choose a new or empty directory")
    os.makedirs(out, exist_ok=True)
    for name in os.listdir(out):
        path = os.path.join(out, name)
        if name.startswith("round") and os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path)
        elif name in ("locate_report.md", "locate_report.json"):
            os.remove(path)
    open(os.path.join(out, MARKER), "w").close()


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "locate":
        argv = argv[1:]
    args = parse_args(argv)
    out = os.path.abspath(args.output)
    prepare_output(out)
    start = time.monotonic()
    progress = Progress(start)
    loc = Locator(args.golden, args.target, out, args.steps, progress)
    report = {"golden": args.golden, "target": args.target, "output": out, "steps": args.steps,
              "rounds": loc.rounds, "verdict": None, "answer": None, "status": None}
    code = 0

    def check_budget(next_round):
        if args.budget_minutes is not None and time.monotonic() - start > args.budget_minutes * 60:
            raise BudgetExhausted(f"the budget of {args.budget_minutes:g} minutes ran out before "
                                  f"round {next_round}")

    try:
        code = _locate(loc, args, report, check_budget)
    except RunFailed as e:
        code = e.code if 0 < e.code < 256 else 1
        report["status"] = "run_failed"
        report["failure"] = {"message": str(e), "code": e.code, "tail": e.tail, "log": e.log}
        report["verdict"] = report["verdict"] or f"stopped: {e}"
        sys.stderr.write(f"numprobe locate: {e}\nlast lines of its output ({e.log}):\n{e.tail}")
    except RoundError as e:
        code = 1
        report["status"] = "round_failed"
        report["failure"] = {"message": str(e)}
        report["verdict"] = f"stopped: {e}" + (f"; so far: {report['verdict']}"
                                               if report["verdict"] else "")
        sys.stderr.write(f"numprobe locate: {e}\n")
    except BudgetExhausted as e:
        code = 2
        report["status"] = "budget_exhausted"
        report["verdict"] = f"incomplete: {e}" + (f"; so far: {report['verdict']}"
                                                 if report["verdict"] else "")
        sys.stderr.write(f"numprobe locate: {e}\n")
    report["seconds"] = round(time.monotonic() - start, 3)
    report["bytes_written"] = bytes_under(out)
    write_reports(out, report)
    print(report["verdict"])
    print(f"report: {os.path.join(out, 'locate_report.md')}")
    return code


def _locate(loc, args, report, check_budget):
    repro = loc.preflight(args.check_repro)
    if repro is not None and not repro["reproducible"]:
        fd = repro["first_divergence"]
        report["status"] = "not_reproducible"
        report["verdict"] = (f"The golden command is not reproducible: two runs of it part at "
                             f"{fd['entry']} ({fd['reason']}); no answer from comparing it with "
                             f"the target would be certain.")
        return 3
    check_budget(1)
    module, mode = loc.modules(args.follow_steps)
    check_budget(2)
    pair, api, neighbours, scope = loc.apis(module, mode)
    if pair is None:
        report["status"] = "no_divergence"
        report["verdict"] = ("No divergence beyond noise: neither the modules (L0) nor the APIs "
                             f"(mix) of the two runs part in steps {loc.steps}.")
        return 0
    answer = _answer(pair, scope[0] if scope else None)
    report["answer"] = answer
    if api is None:  # the module diverges while every API inside agrees
        report["status"] = "located"
        report["verdict"] = _sentence(answer, None)
        return 0
    report["verdict"] = _sentence(answer, None)
    check_budget(3)
    try:
        tensor_pair = loc.tensors(api, neighbours, scope)
        if loc.hidden_input(pair["first_divergence"]):
            # Statistics hid an input change: search the root scope with md5 and, when it names
            # another API, take the tensors of that one (rounds 2c and 3c, counted).
            check_budget("2c")
            new_pair, new_api, new_neighbours, new_scope = loc.research_root("2c")
            if new_api:  # its reason is the better one (md5 saw the input change)
                answer = _answer(new_pair, None)
                report["answer"] = answer
                report["verdict"] = _sentence(answer, None)
                if new_api != api:
                    pair, api, scope = new_pair, new_api, new_scope
                    check_budget("3c")
                    tensor_pair = loc.tensors(api, new_neighbours, scope, k="3c")
        check_budget(4)
        result, api_verdict = loc.acc_check(api, tensor_pair or pair)
    except RoundError as e:
        # Round 2's answer stands; only the tensor evidence or the API check is missing (an API
        # one run does not call at that number dumps nothing there, for example).
        report["status"] = "located_without_evidence"
        report["evidence_error"] = str(e)
        report["verdict"] = _sentence(answer, None)[:-1] + f" (no tensor evidence: {e})."
        sys.stderr.write(f"numprobe locate: {e}\n")
        return 0
    answer["acc_check"] = result
    answer["api_verdict"] = api_verdict
    report["status"] = "located"
    report["verdict"] = _sentence(answer, api_verdict)
    return 0


def _answer(pair, module):
    fd = pair["first_divergence"]
    rank_dir = os.path.dirname(pair["target"])
    return {"entry": fd["entry"], "call": forward_call(fd["entry"]),
            "module": fd.get("module") or module, "reason": fd["reason"],
            "source": fd.get("source"), "step": pair["step"], "rank": pair["rank"],
            "source_line": dumps.source_line(rank_dir, fd["entry"])}


def _sentence(a, api_verdict):
    where = f" in {a['module']}" if a.get("module") and a["module"] != a["entry"] else ""
    rank = f" on rank {a['rank']}" if a.get("rank") is not None and a["rank"] >= 0 else ""
    line = f" ({a['source_line']})" if a.get("source_line") else ""
    tail = f"; acc-check: {api_verdict}" if api_verdict else ""
    data = (" (an input no captured op made differs: the batch, or data changed outside the "
            "captured ops)" if a.get("reason") == "inputs_already_differ" and
            a.get("source") == "data" else "")
    return (f"The runs part first at {a['entry']}{where}{rank}, step {a['step']}{line}: "
            f"{a['reason']}{data}{tail}.")
