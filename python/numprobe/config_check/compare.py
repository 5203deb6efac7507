"""The compare of two packs: one result table per check, each with msprobe's columns, and a
pass/warning/error status per check (docs/config_check.md, "Checks and their pass rules")."""
import re

from . import env, hyperparams, packages, random_calls, tensor_stats
from .pack_io import PackError

_STEP_RANK = re.compile(r"^(?:weights|dataset)/step(\d+)/rank(\d+)/(?:weight|dataset)\.json$")
_RANDOM_RANK = re.compile(r"^random/rank(\d+)\.json$")


class CheckResult:
    def __init__(self, name, header, rows, status, note=""):
        self.name, self.header, self.rows, self.status, self.note = name, header, rows, status, note


def _level_status(rows, column):
    levels = {r[column] for r in rows}
    return "error" if "error" in levels else "warning" if "warning" in levels else "pass"


def _flag_status(rows, column):
    return "error" if any(r[column] is not True for r in rows) else "pass"


def _by_step_rank(pack, prefix):
    out = {}
    for name in pack.names_under(prefix):
        m = _STEP_RANK.match(name)
        if not m:
            raise PackError(f"{pack.path}: member {name} is not {prefix}/step<N>/rank<R>/*.json")
        out[(int(m.group(1)), int(m.group(2)))] = pack.json(name)
    return out


def _check_env(bench, cmp, _framework):
    rows = env.compare(bench.json("env"), cmp.json("env"))
    return env.HEADER, rows, _level_status(rows, 4)


def _check_pip(bench, cmp, framework):
    rows = packages.compare(packages.parse(bench.text("pip")), packages.parse(cmp.text("pip")),
                            framework)
    return packages.HEADER, rows, _level_status(rows, 3)


def _check_hyperparameters(bench, cmp, _framework):
    rows = []
    for member in (hyperparams.STATIC, hyperparams.DYNAMIC):
        if bench.has(member) and cmp.has(member):
            rows += hyperparams.compare(bench.json(member), cmp.json(member), member.split("/")[-1])
    return hyperparams.HEADER, rows, _level_status(rows, 6)


def _check_step_rank(bench, cmp, prefix, compare_one):
    b, c = _by_step_rank(bench, prefix), _by_step_rank(cmp, prefix)
    rows = []
    for key in sorted(set(b) | set(c)):
        if key not in b or key not in c:
            side = "only bench have" if key in b else "only cmp have"
            rows.append(list(key) + [f"(step{key[0]}/rank{key[1]})", side, None, None, None, None])
            continue
        rows += [list(key) + row for row in compare_one(b[key], c[key])]
    return rows


def _check_weights(bench, cmp, _framework):
    rows = _check_step_rank(bench, cmp, "weights", tensor_stats.compare_weights)
    return tensor_stats.WEIGHTS_HEADER, rows, _flag_status(rows, 3)


def _check_dataset(bench, cmp, _framework):
    rows = _check_step_rank(bench, cmp, "dataset", tensor_stats.compare_inputs)
    return tensor_stats.DATASET_HEADER, rows, _flag_status(rows, 3)


def _random_ranks(pack):
    out = {}
    for name in pack.names_under("random"):
        m = _RANDOM_RANK.match(name)
        if not m:
            raise PackError(f"{pack.path}: member {name} is not random/rank<R>.json")
        out[int(m.group(1))] = pack.json(name)
    return out


def _check_random(bench, cmp, _framework):
    rows = random_calls.compare(_random_ranks(bench), _random_ranks(cmp))
    return random_calls.HEADER, rows, _flag_status(rows, 6)


# check name (= its sheet and CSV name, msprobe's) -> (member or folder it needs, compare)
CHECKS = (
    ("env", "env", _check_env),
    ("pip", "pip", _check_pip),
    ("hyperparameters", "hyperparameters", _check_hyperparameters),
    ("weights", "weights", _check_weights),
    ("dataset", "dataset", _check_dataset),
    ("random", "random", _check_random),
)


def _present(pack, member):
    return pack.has(member) or bool(pack.names_under(member))


def compare_packs(bench, cmp, framework="pytorch"):
    """[CheckResult] for every check; a check whose members one pack lacks is "skipped"."""
    results = []
    for name, member, run in CHECKS:
        in_bench, in_cmp = _present(bench, member), _present(cmp, member)
        if not (in_bench and in_cmp):
            where = ("neither pack" if not in_bench and not in_cmp
                     else f"only the {'golden' if in_bench else 'target'} pack")
            results.append(CheckResult(name, [], [], "skipped", f"{member} in {where}"))
            continue
        header, rows, status = run(bench, cmp, framework)
        results.append(CheckResult(name, header, rows, status))
    return results
