"""acc-check speed: API replays per second (tensors up to 1 MB) and multi-acc-check scaling.

Builds a statistics dump.json of N API calls (gelu, softmax, layer_norm, linear, add, mul, conv2d,
relu, matmul) over float32 tensors of 64 KB - 1 MB, each with its backward entry, then times
`numprobe acc-check` and `numprobe multi-acc-check -n 2` on it. Prints numbers; asserts nothing.

    PYTHONPATH=python /usr/bin/python3 bench/acc_check_bench.py [N]
"""
import json
import os
import pathlib
import re
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
CLI = ROOT / "build" / "bin" / "numprobe"


def leaf(shape, lo=-2.0, hi=2.0, rg=True):
    n = 1
    for s in shape:
        n *= s
    return {"type": "torch.Tensor", "dtype": "torch.float32", "shape": list(shape), "Max": hi,
            "Min": lo, "Mean": 0.0, "Norm": (n ** 0.5), "requires_grad": rg}


def scalar(v):
    return {"type": type(v).__name__, "value": v}


def entries(n):
    shapes = [(64, 256), (128, 512), (256, 1024), (32, 128, 64)]
    kinds = ["gelu", "softmax", "layer_norm", "linear", "__add__", "__mul__", "conv2d", "relu",
             "matmul"]
    data = {}
    for i in range(n):
        kind, shape = kinds[i % len(kinds)], shapes[i % len(shapes)]
        x = leaf(shape)
        if kind == "gelu":
            name, args, kw = f"Functional.gelu.{i}", [x], {}
        elif kind == "relu":
            name, args, kw = f"Functional.relu.{i}", [x], {}
        elif kind == "softmax":
            name, args, kw = f"Functional.softmax.{i}", [x], {"dim": scalar(-1)}
        elif kind == "layer_norm":
            d = shape[-1]
            name, args, kw = f"Functional.layer_norm.{i}", [x, {"type": "torch.Size", "value": [d]},
                                                            leaf([d]), leaf([d])], {}
        elif kind == "linear":
            d = shape[-1]
            name, args, kw = f"Functional.linear.{i}", [x, leaf([128, d]), leaf([128])], {}
        elif kind in ("__add__", "__mul__"):
            name, args, kw = f"Tensor.{kind}.{i}", [x, leaf(shape)], {}
        elif kind == "matmul":
            d = shape[-1]
            name, args, kw = f"Torch.matmul.{i}", [x, leaf([d, 64])], {}
        else:
            name, args, kw = f"Functional.conv2d.{i}", [leaf([4, 16, 32, 32]), leaf([32, 16, 3, 3]),
                                                        leaf([32])], {"padding": scalar(1)}
        out = list(shape)
        if kind == "linear":
            out[-1] = 128
        elif kind == "matmul":
            out[-1] = 64
        elif kind == "conv2d":
            out = [4, 32, 32, 32]
        data[name + ".forward"] = {"input_args": args, "input_kwargs": kw, "output": [leaf(out)]}
        data[name + ".backward"] = {"input": [leaf(out, rg=False)], "output": [x]}
    return {"task": "statistics", "level": "L1", "data": data}


def run(cmd):
    t0 = time.time()
    p = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.time() - t0
    if p.returncode != 0:
        sys.exit(p.stderr)
    m = re.search(r"(\d+) APIs in ([\d.]+) s", p.stdout)
    return wall, int(m.group(1)), float(m.group(2))


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 360
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "dump.json")
        with open(src, "w") as f:
            json.dump(entries(n), f)
        w1, apis, loop1 = run([str(CLI), "acc-check", "-api_info", src, "-o", tmp + "/one", "-q"])
        w2, _, loop2 = run([str(CLI), "multi-acc-check", "-api_info", src, "-o", tmp + "/two",
                            "-n", "2", "-q"])
    print(f"acc-check, {apis} APIs (forward + backward, float32, 64 KB - 1 MB inputs), "
          f"1 torch thread per process, {os.cpu_count()} cores")
    print(f"  one process : {w1:6.2f} s wall, {apis / w1:6.1f} APIs/s wall, "
          f"{apis / loop1:6.1f} APIs/s in the replay loop (without python + torch start-up)")
    print(f"  2 workers   : {w2:6.2f} s wall, {apis / w2:6.1f} APIs/s wall, "
          f"{apis / loop2:6.1f} APIs/s in the replay loop; speed-up {w1 / w2:.2f}x wall, "
          f"{loop1 / loop2:.2f}x loop")


if __name__ == "__main__":
    main()
