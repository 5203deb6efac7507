"""One training step of ms_models' Transformer, captured, in a process of its own (MindSpore reads
MINDSPORE_DUMP_CONFIG once per process, so every graph-mode L2 capture needs a fresh one):

    python ms_graph_run.py <out> <mode: graph|pynative> <level> [--eps E] [--late] [--task T]

--late runs one uncaptured graph step before the debugger is made (the dump config then comes too
late). Prints one JSON line: {"losses": [...], "report": <L2 conversion report or null>} or
{"error": "<NumprobeError text>"}."""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import mindspore as ms  # noqa: E402

import ms_models  # noqa: E402
import numprobe  # noqa: E402
from numprobe.mindspore import NumprobeError  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("mode", choices=["graph", "pynative"])
    ap.add_argument("level")
    ap.add_argument("--eps", type=float, default=None)
    ap.add_argument("--late", action="store_true")
    ap.add_argument("--task", default="statistics")
    a = ap.parse_args()
    ms.set_context(mode=ms.GRAPH_MODE if a.mode == "graph" else ms.PYNATIVE_MODE)
    net, x, y = ms_models.make(faulty_eps=a.eps)
    if a.late:
        ms_models.train_step(net, x, y)
    try:
        dbg = numprobe.PrecisionDebugger(dump_path=a.out, level=a.level, task=a.task, model=net)
        losses, _ = ms_models.train_step(net, x, y, dbg)
        report = dbg.close()
    except NumprobeError as e:
        print(json.dumps({"error": str(e)}))
        return
    print(json.dumps({"losses": [float(v) for v in losses],
                      "report": report if isinstance(report, dict) else None}))


if __name__ == "__main__":
    main()
