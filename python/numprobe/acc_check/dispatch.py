"""Which replay runs an acc-check: a MindSpore dump on MindSpore where MindSpore is installed
(ms_cli, no torch imported), everything else on torch (cli). NUMPROBE_ACC_FRAMEWORK=torch or
mindspore chooses."""
import importlib.util
import json
import os
import sys


def _framework(argv):
    """The "framework" field of the dump -api_info names, "" when it cannot be read here (the
    chosen replay then reports what is wrong with the file)."""
    for flag in ("-api_info", "--api_info_file"):
        if flag in argv[:-1]:
            path = argv[argv.index(flag) + 1]
            try:
                from .plan import resolve_api_info
                with open(resolve_api_info(path), encoding="utf-8") as f:
                    doc = json.load(f)
                return doc.get("framework", "") if isinstance(doc, dict) else ""
            except (OSError, ValueError):
                return ""
    return ""


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    choice = os.environ.get("NUMPROBE_ACC_FRAMEWORK", "")
    if not choice:
        mindspore = _framework(argv) == "mindspore" and importlib.util.find_spec("mindspore")
        choice = "mindspore" if mindspore else "torch"
    if choice == "mindspore":
        from .ms_cli import main as ms_main
        return ms_main(argv)
    from .cli import main as torch_main
    return torch_main(argv)
