"""`numprobe stats` (statistics + CRC-32 of a .npy) against `cat` of the same file to /dev/null: the
statistics and the CRC should cost about as much as reading the file. Warm page cache, best of R.

    python3 bench/stats_vs_cat.py [--bin build/bin/numprobe] [--mib 1024] [--runs 5]
"""
import argparse
import array
import os
import subprocess
import tempfile
import time


def best(cmd, runs):
    t = 1e300
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run(cmd, stdout=subprocess.DEVNULL, check=True)
        t = min(t, time.perf_counter() - t0)
    return t


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default="build/bin/numprobe")
    ap.add_argument("--mib", type=int, default=1024)
    ap.add_argument("--runs", type=int, default=5)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "x.npy")
        n = (a.mib << 20) // 4
        header = "{'descr': '<f4', 'fortran_order': False, 'shape': (%d,), }" % n
        header += " " * (128 - 10 - len(header) - 1) + "\n"
        # 1 MiB of ordinary float32 values in [-0.5, 0.5) (no subnormals, which would time the
        # CPU's slow path instead), repeated.
        chunk = array.array("f", [((i * 2654435761) % 1000003) / 1000003.0 - 0.5
                                  for i in range(1 << 18)]).tobytes()
        with open(path, "wb") as f:
            f.write(b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header.encode())
            for _ in range(a.mib):
                f.write(chunk)
        subprocess.run(["cat", path], stdout=subprocess.DEVNULL, check=True)  # warm the page cache
        t_cat = best(["cat", path], a.runs)
        t_stats = best([a.bin, "stats", path], a.runs)
    gb = a.mib * (1 << 20) / 1e9
    print(f"numprobe stats vs cat, {a.mib} MiB float32 .npy, warm cache, best of {a.runs}")
    print(f"  cat > /dev/null   {t_cat:6.3f} s  ({gb / t_cat:5.2f} GB/s)")
    print(f"  numprobe stats    {t_stats:6.3f} s  ({gb / t_stats:5.2f} GB/s, {t_stats / t_cat:.2f}x cat)")


if __name__ == "__main__":
    main()
