"""Cost of the statistics of one large CUDA tensor (issue 3, GPU): prints, per size, the time an
L1-captured torch.neg(x) adds over an uncaptured one (both followed by torch.cuda.synchronize()),
and the statistics bandwidth that implies (input and output leaves: 2 x the tensor's bytes).
Run it twice to compare the fused kernel with the ATen reductions it replaces:
  python bench/cuda_stats_bench.py            # fused kernel (where built with nvcc)
  NUMPROBE_ATEN_DEVICE_STATS=1 python bench/cuda_stats_bench.py
"""
import os
import shutil
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import torch  # noqa: E402

import numprobe  # noqa: E402


def timed(fn, reps):
    times = []
    for _ in range(reps):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main():
    if not torch.cuda.is_available():
        sys.exit("cuda_stats_bench: no CUDA device")
    path = ("ATen reductions" if os.environ.get("NUMPROBE_ATEN_DEVICE_STATS") == "1"
            or not numprobe._C.cuda_stats_kernel() else "fused kernel")
    print(f"device {torch.cuda.get_device_name()}, torch {torch.__version__}, statistics by {path}")
    tmp = tempfile.mkdtemp(prefix="numprobe_cuda_stats_")
    try:
        for dtype in (torch.float32, torch.bfloat16):
            for n in (1 << 20, 1 << 24, 1 << 26):
                x = torch.randn(n, device="cuda").to(dtype)
                base = timed(lambda: torch.neg(x), 20)
                dbg = numprobe.PrecisionDebugger(dump_path=os.path.join(tmp, "d"), level="L1")

                def captured():
                    dbg.start()
                    torch.neg(x)
                    dbg.stop()
                    dbg.step()
                cap = timed(captured, 20)
                dbg.close()
                added = cap - base
                gbs = 2 * n * x.element_size() / added / 1e9 if added > 0 else float("inf")
                print(f"{str(dtype):15} {n:>10,} elements: uncaptured {base * 1e3:7.3f} ms, "
                      f"captured {cap * 1e3:7.3f} ms, added {added * 1e3:7.3f} ms "
                      f"({gbs:6.0f} GB/s of statistics)")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
