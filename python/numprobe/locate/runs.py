"""Running the user's commands and numprobe's own subcommands, with progress and logs."""
import os
import shutil
import subprocess
import sys
import time

TAIL_LINES = 20


class RunFailed(Exception):
    """A user command (or a numprobe subcommand) exited nonzero: locate stops with its code."""

    def __init__(self, what, command, code, tail, log):
        super().__init__(f"{what} failed with exit code {code}: {command}")
        self.what, self.command, self.code, self.tail, self.log = what, command, code, tail, log


class Progress:
    """One line per run on stderr; on a tty the line of the run in progress is redrawn with its
    elapsed time when it ends."""

    def __init__(self, start):
        self.start = start
        self.tty = sys.stderr.isatty()

    def begin(self, round_no, what):
        self._line = f"[round {round_no}] {what}"
        if self.tty:
            sys.stderr.write(f"{self._line} ...")
            sys.stderr.flush()

    def end(self, seconds, note=""):
        total = time.monotonic() - self.start
        text = f"{self._line}: {seconds:.1f} s{note} (elapsed {total:.1f} s)"
        sys.stderr.write(("\r" + text + "\033[K\n") if self.tty else text + "\n")
        sys.stderr.flush()

    def say(self, text):
        sys.stderr.write(text + "\n")
        sys.stderr.flush()


def tail_of(path, lines=TAIL_LINES):
    with open(path, encoding="utf-8", errors="replace") as f:
        return "".join(f.readlines()[-lines:])


def _logged_call(command, log_path, what, ok_codes=(0,), **popen):
    """Runs command with stdout and stderr into log_path; returns (exit code, seconds). Codes
    outside ok_codes raise RunFailed with the log's last lines."""
    t0 = time.monotonic()
    with open(log_path, "w", encoding="utf-8") as log:
        code = subprocess.call(command, stdout=log, stderr=subprocess.STDOUT, **popen)
    seconds = time.monotonic() - t0
    if code not in ok_codes:
        shown = command if isinstance(command, str) else " ".join(command)
        raise RunFailed(what, shown, code, tail_of(log_path), log_path)
    return code, seconds


def run_command(command, log_path, env_extra, what):
    """Runs a shell command with env_extra added. Returns the seconds it took; raises RunFailed on
    a nonzero exit."""
    env = dict(os.environ)
    env.update(env_extra)
    return _logged_call(command, log_path, what, shell=True, env=env)[1]


def numprobe_cli():
    """The numprobe binary: the one that started this front (NUMPROBE_CLI), else on PATH."""
    cli = os.environ.get("NUMPROBE_CLI") or shutil.which("numprobe")
    if not cli:
        raise SystemExit("numprobe locate: error: cannot find the numprobe binary "
                         "(set NUMPROBE_CLI, or put numprobe on PATH)")
    return cli


def run_numprobe(args, log_path, what, ok_codes=(0,)):
    """Runs `numprobe <args>`; returns (exit code, seconds). Codes outside ok_codes raise."""
    return _logged_call([numprobe_cli()] + list(args), log_path, what, ok_codes)
