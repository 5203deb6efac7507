"""`numprobe config-check` (the CLI hands its command line here, src/cli/python_front.cc).
Exit status: 0 every check passed (warnings allowed), 1 a check failed, 2 bad input: an unreadable
pack, script or yaml (the message names the file) or bad arguments."""
import argparse
import sys

from .compare import compare_packs
from .pack_io import Pack, PackError
from . import report

ORDER = {"error": 0, "warning": 1, "skipped": 2, "pass": 3}


def _parser():
    p = argparse.ArgumentParser(prog="numprobe config-check",
                                description="Pack a training's setup, or compare two packs "
                                            "(docs/config_check.md).")
    mode = p.add_mutually_exclusive_group(required=True)
    mode.add_argument("-d", "--dump", nargs="*", metavar="SCRIPT_OR_YAML",
                      help="write a static pack: environment, packages and the hyper-parameters "
                           "of these launch scripts / yaml files")
    mode.add_argument("-c", "--compare", nargs=2, metavar=("GOLDEN_ZIP", "TARGET_ZIP"),
                      help="compare two packs")
    p.add_argument("-o", "--output", help="the pack (-d, default ./config_check_pack.zip) or the "
                                          "result folder (-c, default ./config_check_result)")
    p.add_argument("-f", "--framework", "--fmk", default="pytorch", choices=["pytorch"])
    return p


def _fails(row):
    return "error" in row or any(v is False for v in row)  # `False in row` would match a rank 0


def _print_results(results, written, note):
    ordered = sorted(results, key=lambda r: ORDER[r.status])
    for r in ordered:
        detail = f" ({len(r.rows)} rows)" if r.status != "skipped" else f" ({r.note})"
        print(f"{r.status.upper():8s} {r.name}{detail}")
        if r.status == "error":
            for row in [row for row in r.rows if _fails(row)][:5]:
                print("         " + " | ".join(str(v).split("\n")[-1] for v in row if v not in ("", None)))
    for path in written[:1]:
        print(f"result: {path}")
    if note:
        print(note, file=sys.stderr)


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "config-check":
        argv = argv[1:]
    args = _parser().parse_args(argv)
    try:
        if args.dump is not None:
            from . import static_pack
            out = args.output or "./config_check_pack.zip"
            members = static_pack(args.dump, out)
            print(f"config-check: wrote {out} ({', '.join(sorted(members))})")
            return 0
        golden, target = (Pack(path) for path in args.compare)
        results = compare_packs(golden, target, args.framework)
        written, note = report.write(results, args.output or "./config_check_result")
    except PackError as e:
        print(f"numprobe config-check: error: {e}", file=sys.stderr)
        return 2
    except OSError as e:  # the output folder or pack cannot be written
        print(f"numprobe config-check: error: {e.filename or ''}: {e.strerror or e}", file=sys.stderr)
        return 2
    _print_results(results, written, note)
    return 1 if any(r.status == "error" for r in results) else 0
