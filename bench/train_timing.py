"""The timing loop the training-step benchmarks share (bench_monitor.py, bench_grad_probe.py):
`--name=value` options, one Adam step of a model on a fixed batch, and a step timer that reports
wall and process CPU time (every thread of the process: writer threads count)."""
import statistics
import sys
import time


def option(name, default):
    for a in sys.argv[1:]:
        if a.startswith(f"--{name}="):
            return a.split("=", 1)[1]
    return default


def step(model, opt, x):
    opt.zero_grad()
    model(x).float().pow(2).mean().backward()
    opt.step()


def timed(model, opt, x, n):
    """(median wall time of a step, process CPU time per step, fastest step)."""
    times = []
    cpu = time.process_time()
    for _ in range(n):
        t = time.perf_counter()
        step(model, opt, x)
        times.append(time.perf_counter() - t)
    return statistics.median(times), (time.process_time() - cpu) / n, min(times)
