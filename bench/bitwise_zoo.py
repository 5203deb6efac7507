"""Does a dump change the training it observes? numprobe against msprobe on the zoo of
tests/python/zoo_models.py, one AdamW step per model and level, each compared bitwise (torch.equal on
the loss and every parameter and buffer) with the uncaptured step of the same process, which is first
run twice to show that it repeats itself.

Prints a table; asserts nothing (the bitwise claim for numprobe is tests/python/test_bitwise_zoo.py).
Each (tool, model, level) runs in a fresh process: msprobe's debugger is one per process.

usage: .venv/torch2/bin/python bench/bitwise_zoo.py [--tools numprobe,msprobe] [--levels L0,L1,mix,L2]
                                                    [--models hf_llama,...]
numprobe is imported from NUMPROBE_PYTHONPATH (default: build-torch2/python, else python/).
"""
import argparse
import json
import os
import pathlib
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "python"))


def worker(tool, level, model, dump):
    if tool == "msprobe" and level == "L2":
        # msprobe's torch L2 is a kernel dump of the one API its `list` names, not a level of the
        # whole step (it refuses an empty list).
        return {"result": "n/a (one API's kernels)"}
    import torch
    torch.set_num_threads(1)
    import zoo_models as zoo
    missing = zoo.missing_package(model)
    if missing:
        return {"result": f"skip: no {missing}"}
    first, second = zoo.train_step(model), zoo.train_step(model)
    unstable = zoo.differences(first, second)
    if unstable:
        return {"result": "skip: uncaptured step does not repeat"}
    if tool == "numprobe":
        import numprobe
        dbg = numprobe.PrecisionDebugger(dump_path=dump, level=level)
    else:
        from msprobe.pytorch import PrecisionDebugger
        cfg = {"task": "statistics", "dump_path": dump, "rank": [], "step": [], "level": level,
               "statistics": {"scope": [], "list": [], "data_mode": ["all"],
                              "summary_mode": "statistics"}}
        path = dump + ".config.json"
        with open(path, "w") as f:
            json.dump(cfg, f)
        dbg = PrecisionDebugger(config_path=path)
    try:
        captured = zoo.train_step(model, dbg)
    except Exception as e:  # noqa: BLE001 - reported in the table
        return {"result": f"error: {type(e).__name__}: {str(e)[:80]}"}
    finally:
        if tool == "numprobe":
            dbg.close()
    diff = zoo.differences(first, captured)
    if not diff:
        return {"result": "bitwise"}
    worst = 0.0
    (loss_a, state_a), (loss_b, state_b) = first, captured
    for n in diff:
        a, b = (loss_a, loss_b) if n == "loss" else (state_a[n], state_b[n])
        if a.shape == b.shape and a.is_floating_point():
            worst = max(worst, (a.double() - b.double()).abs().max().item())
    return {"result": f"differs ({len(diff)} tensors, max |d| {worst:.1e})"}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tools", default="numprobe,msprobe")
    ap.add_argument("--levels", default="L0,L1,mix,L2")
    ap.add_argument("--models", default="")
    ap.add_argument("--worker", nargs=4, metavar=("TOOL", "LEVEL", "MODEL", "DUMP"))
    args = ap.parse_args()
    if args.worker:
        print("WORKER " + json.dumps(worker(*args.worker)))
        return
    import zoo_models as zoo
    models = args.models.split(",") if args.models else list(zoo.ZOO)
    tools, levels = args.tools.split(","), args.levels.split(",")
    env = dict(os.environ)
    if "NUMPROBE_PYTHONPATH" not in env:
        tree = ROOT / "build-torch2" / "python"
        env["NUMPROBE_PYTHONPATH"] = str(tree if tree.exists() else ROOT / "python")
    env["PYTHONPATH"] = os.pathsep.join([env["NUMPROBE_PYTHONPATH"], env.get("PYTHONPATH", "")])
    import torch
    print(f"torch {torch.__version__}, one CPU thread, one AdamW step per model; "
          f"numprobe from {env['NUMPROBE_PYTHONPATH']}")
    print(f"| model | level | " + " | ".join(tools) + " |")
    print("|---|---|" + "---|" * len(tools))
    with tempfile.TemporaryDirectory() as tmp:
        for model in models:
            for level in levels:
                cells = []
                for tool in tools:
                    dump = os.path.join(tmp, f"{tool}_{model}_{level}")
                    p = subprocess.run([sys.executable, __file__, "--worker", tool, level, model, dump],
                                       capture_output=True, text=True, env=env, cwd=tmp)
                    lines = [ln for ln in p.stdout.splitlines() if ln.startswith("WORKER ")]
                    if lines:
                        cells.append(json.loads(lines[-1][7:])["result"])
                    else:
                        tail = (p.stderr.strip().splitlines() or ["?"])[-1][:80]
                        cells.append(f"error: exit {p.returncode}: {tail}")
                print(f"| {model} | {level} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
