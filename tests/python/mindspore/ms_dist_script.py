"""Run under `msrun --worker_num=1`: a one-process communication group on MindSpore's CPU backend,
collectives captured at L1 (test_ms_distributed.py). argv: dump_path task."""
import sys

import numpy as np
import mindspore as ms
from mindspore.communication import init
from mindspore.mint import distributed as dist

import numprobe

ms.set_device("CPU")
init()
dump_path, task = sys.argv[1], sys.argv[2]
dbg = numprobe.PrecisionDebugger(dump_path=dump_path, level="L1", task=task)
x = ms.Tensor(np.arange(6, dtype=np.float32).reshape(2, 3) - 2.5)
dbg.start()
y = x * 2  # Tensor.__mul__ before the collectives, as in a training step
dist.all_reduce(y)
handle = dist.all_reduce(y, op="sum", async_op=True)
handle.wait()
dist.broadcast(y, 0)
dbg.stop()
dbg.step()
dbg.close()
print("values after", y.asnumpy().ravel().tolist())
