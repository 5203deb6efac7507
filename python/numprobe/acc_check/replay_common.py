"""What the torch and the MindSpore replays share and what does not depend on a framework: the
options, the outcome of one API, the statuses, and reading a recorded tensor file. Only numpy is
imported here, so the MindSpore venv (no torch) and the torch venvs both load it."""
import os
import sys
import time
from dataclasses import dataclass, field

import numpy as np

SKIP, PASS, WARNING, ERROR = "SKIP", "pass", "warning", "error"


class ReplayInputError(ValueError):
    """The dump cannot be turned into arguments (shape/data mismatch, missing file, ...)."""


@dataclass
class Options:
    seed: int = 1234
    real_data: bool = False  # tensor dump: replay the recorded inputs
    offline: bool = False    # tensor dump: the recorded outputs are the device result
    device: str = "cpu"      # torch only: where the device run goes
    data_dirs: list = field(default_factory=list)  # searched for tensor files after the case's own


@dataclass
class Outcome:
    forward_status: str
    backward_status: str
    forward: list
    backward: list
    message: str = ""
    arrays: dict = field(default_factory=dict)  # what -save_error_data saves, in the framework's types


def skipped(message, engine):
    """An API that is not replayed. `engine` is the binding whose result types the caller writes
    with (numprobe._C or numprobe._engine: their types are module-local, not interchangeable)."""
    return Outcome(SKIP, " ", [engine.acc_unusable(SKIP, message)], [], message)


def load_npy(data_dirs, leaf, shape):
    """The recorded tensor of a dump leaf, from the first of data_dirs that holds its data_name,
    checked against the shape dump.json gives; a C-contiguous copy (0-d arrays stay 0-d)."""
    name = leaf.get("data_name")
    if not name:
        raise ReplayInputError("tensor dump without data_name for a tensor")
    path = next((os.path.join(d, name) for d in data_dirs
                 if os.path.isfile(os.path.join(d, name))), None)
    if path is None:
        raise ReplayInputError(f"{name}: tensor file not found in {', '.join(data_dirs)}")
    if not path.endswith(".npy"):
        raise ReplayInputError(f"{path}: only .npy tensor files are read")
    try:
        arr = np.load(path, allow_pickle=False)
    except Exception as e:  # a corrupt file is the user's data, not our bug
        raise ReplayInputError(f"{path}: cannot read ({e})") from None
    if list(arr.shape) != list(shape):
        raise ReplayInputError(f"{path}: shape {list(arr.shape)} but dump.json says {shape}")
    return np.array(arr, order="C", copy=True)


def worst(forward, backward, engine):
    """One verdict for an API: SKIP when the forward was skipped, else the worse of the two."""
    return forward if forward == SKIP else engine.acc_worse(forward, backward)


def run_cases(cases, files, run_one, engine, save_errors=None, progress=False):
    """Replays each case not already in `files` (an AccResultFiles of `engine`) with
    run_one(case) -> Outcome and writes its rows; a case that raises is written as SKIP with the
    reason and the run goes on. save_errors(api, arrays), when given, gets failing APIs' data.
    Returns ({verdict: count}, cases replayed, seconds)."""
    counts = {PASS: 0, WARNING: 0, ERROR: 0, SKIP: 0}
    t0, done = time.time(), 0
    for case in cases:
        if files.done(case.name):
            continue
        if case.skip_reason:
            out = skipped(case.skip_reason, engine)
        else:
            try:
                out = run_one(case)
            except Exception as e:  # noqa: BLE001 - a bad entry is reported and the run goes on
                out = skipped(f"{type(e).__name__}: {e}".strip(), engine)
        files.write(case.name, out.forward_status, out.backward_status, out.forward, out.backward,
                    out.message if SKIP in (out.forward_status, out.backward_status) else "")
        if save_errors and ERROR in (out.forward_status, out.backward_status):
            save_errors(case.name, out.arrays)
        verdict = worst(out.forward_status, out.backward_status, engine)
        counts[verdict] = counts.get(verdict, 0) + 1
        done += 1
        if progress and done % 50 == 0:
            rate = done / max(time.time() - t0, 1e-9)
            print(f"  {done}/{len(cases)} APIs, {rate:.0f}/s", file=sys.stderr)
    return counts, done, time.time() - t0
