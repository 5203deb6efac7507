"""MindSpore graph mode, level L2 (issue 34): what a kernel dump costs a training step, and what
numprobe's conversion costs, on the CPU.

The lane's two-block Transformer (tests/python/mindspore/ms_models.py: d 16, batch 2, seq 5), one
step = ms.value_and_grad + SGD in GRAPH_MODE. Each configuration runs in a process of its own
(MindSpore reads MINDSPORE_DUMP_CONFIG once per process): 2 warm-up steps, then --steps timed
steps; the median step is printed. Uncaptured: no dump config. L2: PrecisionDebugger(level="L2"),
so MindSpore writes every kernel's tensors (the dump's cost is MindSpore's: the CPU cannot store
statistics only); then close() converts the whole dump (engine statistics; with task tensor also
the tensor copies), timed alone.
Usage: PYTHONPATH=build-mindspore/python .venv/mindspore/bin/python bench/ms_graph_l2_bench.py
[--steps=N] [--task=statistics|tensor]
"""
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time

HERE = pathlib.Path(__file__).resolve().parent
MODELS = HERE.parent / "tests" / "python" / "mindspore"


def child(mode, steps, task, out):
    sys.path.insert(0, str(MODELS))
    import mindspore as ms
    import numprobe
    import ms_models
    dbg = None
    if mode == "L2":
        dbg = numprobe.PrecisionDebugger(dump_path=out, level="L2", task=task, framework="mindspore")
    ms.set_context(mode=ms.GRAPH_MODE)
    net, x, y = ms_models.make()
    grad_fn = ms.value_and_grad(net, None, net.trainable_params())
    opt = ms.nn.SGD(net.trainable_params(), learning_rate=0.1)
    times = []
    for i in range(steps + 2):
        t0 = time.perf_counter()
        loss, g = grad_fn(x, y)
        opt(g)
        loss.asnumpy()
        if i >= 2:
            times.append(time.perf_counter() - t0)
    res = {"step_s": statistics.median(times)}
    if dbg is not None:
        t0 = time.perf_counter()
        rep = dbg.close()
        res["convert_s"] = time.perf_counter() - t0
        res["entries"] = rep["entries"]
        res["steps"] = rep["steps"]
        res["files"] = sum(1 for _ in pathlib.Path(out, "mindspore_kernel_dump").rglob("*.npy"))
    print(json.dumps(res))


def main():
    steps = int(next((a.split("=")[1] for a in sys.argv if a.startswith("--steps=")), 5))
    task = next((a.split("=")[1] for a in sys.argv if a.startswith("--task=")), "statistics")
    if "--child" in sys.argv:
        i = sys.argv.index("--child")
        child(sys.argv[i + 1], steps, task, sys.argv[i + 2])
        return
    env = dict(os.environ)
    env.pop("MINDSPORE_DUMP_CONFIG", None)
    res = {}
    with tempfile.TemporaryDirectory() as tmp:
        for mode in ("none", "L2"):
            p = subprocess.run([sys.executable, __file__, f"--steps={steps}", f"--task={task}",
                                "--child", mode, os.path.join(tmp, mode)],
                               capture_output=True, text=True, env=env, check=True)
            res[mode] = json.loads(p.stdout.strip().splitlines()[-1])
    base, l2 = res["none"]["step_s"], res["L2"]
    print(f"graph mode, {steps} timed steps, task {task}")
    print(f"uncaptured step  {base * 1e3:8.1f} ms")
    print(f"L2 step          {l2['step_s'] * 1e3:8.1f} ms  ratio {l2['step_s'] / base:.2f}x "
          f"(MindSpore's dump of every kernel tensor)")
    print(f"convert at close {l2['convert_s'] * 1e3:8.1f} ms  for {l2['files']} .npy files, "
          f"{l2['steps']} step dumps, {l2['entries']} entries")


if __name__ == "__main__":
    main()
