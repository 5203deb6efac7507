"""`numprobe config-check -d ...`: the static pack (the CLI hands its command line here,
src/cli/python_front.cc; `-c`, the compare, is the CLI's own C++ subcommand).
Exit status: 0 written, 2 bad input: an unreadable script or yaml (the message names the file), an
unwritable pack, bad arguments."""
import argparse
import sys

from .pack_io import PackError


def _parser():
    p = argparse.ArgumentParser(prog="numprobe config-check",
                                description="Pack a training's setup (docs/config_check.md); "
                                            "compare two packs with `numprobe config-check -c "
                                            "golden.zip target.zip -o out/`.")
    p.add_argument("-d", "--dump", nargs="*", metavar="SCRIPT_OR_YAML", required=True,
                   help="write a static pack: environment, packages and the hyper-parameters of "
                        "these launch scripts / yaml files")
    p.add_argument("-o", "--output", default="./config_check_pack.zip",
                   help="the pack (default ./config_check_pack.zip)")
    p.add_argument("-f", "--framework", "--fmk", default="pytorch", choices=["pytorch"])
    return p


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "config-check":
        argv = argv[1:]
    if "-c" in argv or "--compare" in argv:
        print("numprobe config-check: error: the compare is the numprobe CLI's: "
              "numprobe config-check -c golden.zip target.zip -o out/", file=sys.stderr)
        return 2
    args = _parser().parse_args(argv)
    from . import static_pack
    try:
        members = static_pack(args.dump, args.output)
    except PackError as e:
        print(f"numprobe config-check: error: {e}", file=sys.stderr)
        return 2
    except OSError as e:  # the pack cannot be written
        print(f"numprobe config-check: error: {e.filename or ''}: {e.strerror or e}", file=sys.stderr)
        return 2
    print(f"config-check: wrote {args.output} ({', '.join(sorted(members))})")
    return 0
