"""The MindSpore half of the MindSpore/PyTorch twin (PyNative, CPU): the model of gpt_twin_pt.py
written with `mindspore.mint` (PyTorch's spellings), `nn.LayerNorm` and `ops.gelu`, loaded from
the shared .npy weights and batch, one SGD step captured by numprobe.

    PYTHONPATH=build-mindspore/python .venv/mindspore/bin/python examples/mindspore/gpt_twin_ms.py \
        --weights W --out DUMP [--fault ln_eps|gelu_tanh]

MindSpore 2.10's CPU lacks some mint kernels (`mint.nn.functional.gelu`, `layer_norm`, `mse_loss`
are Ascend-only): those calls are `ops.gelu`, `nn.LayerNorm` and `ops.mse_loss`.
"""
import math
import os
import sys

import numpy as np
import mindspore as ms
from mindspore import mint, nn, ops

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpt_twin_common as C  # noqa: E402


class Linear(nn.Cell):
    """torch.nn.Linear's layout (weight [out, in], bias [out]) on mint's linear."""

    def __init__(self, d_in, d_out):
        super().__init__()
        self.weight = ms.Parameter(ms.Tensor(np.zeros((d_out, d_in), np.float32)), name="weight")
        self.bias = ms.Parameter(ms.Tensor(np.zeros((d_out,), np.float32)), name="bias")

    def construct(self, x):
        return mint.nn.functional.linear(x, self.weight, self.bias)


class Attention(nn.Cell):
    def __init__(self):
        super().__init__()
        self.q, self.k, self.v, self.o = (Linear(C.D, C.D) for _ in range(4))
        self.mask = ms.Tensor(C.causal_mask())

    def construct(self, x):
        b, t, d = x.shape
        hd = d // C.HEADS
        q = mint.transpose(self.q(x).reshape(b, t, C.HEADS, hd), 1, 2)
        k = mint.transpose(self.k(x).reshape(b, t, C.HEADS, hd), 1, 2)
        v = mint.transpose(self.v(x).reshape(b, t, C.HEADS, hd), 1, 2)
        att = mint.matmul(q, mint.transpose(k, -2, -1)) / math.sqrt(hd)
        att = mint.nn.functional.softmax(att.masked_fill(self.mask, -1e9), dim=-1)
        y = mint.transpose(mint.matmul(att, v), 1, 2).reshape(b, t, d)
        return self.o(y)


class MLP(nn.Cell):
    def __init__(self, approximate):
        super().__init__()
        self.fc1, self.fc2 = Linear(C.D, 4 * C.D), Linear(4 * C.D, C.D)
        self.approximate = approximate

    def construct(self, x):
        return self.fc2(ops.gelu(self.fc1(x), approximate=self.approximate))


class Block(nn.Cell):
    def __init__(self, eps, approximate):
        super().__init__()
        self.ln1, self.attn = nn.LayerNorm((C.D,), epsilon=C.EPS), Attention()
        self.ln2, self.mlp = nn.LayerNorm((C.D,), epsilon=eps), MLP(approximate)

    def construct(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class GPT(nn.Cell):
    def __init__(self, fault=""):
        super().__init__()
        self.inp = Linear(C.D_IN, C.D)
        self.blocks = nn.CellList([Block(C.block_eps(i, fault), C.block_gelu(i, fault))
                                   for i in range(C.LAYERS)])
        self.ln_f, self.head = nn.LayerNorm((C.D,), epsilon=C.EPS), Linear(C.D, C.D_OUT)

    def construct(self, x, y):
        h = self.inp(x)
        for blk in self.blocks:
            h = blk(h)
        return ops.mse_loss(self.head(self.ln_f(h)), y)


# nn.LayerNorm names its parameters gamma/beta where torch.nn.LayerNorm says weight/bias.
TORCH_NAME = {"gamma": "weight", "beta": "bias"}


def shared_model(weights, fault=""):
    ms.set_device("CPU")
    model = GPT(fault)
    for name, p in model.parameters_and_names():
        path, leaf = name.rsplit(".", 1)
        p.set_data(ms.Tensor(C.load_array(weights, f"{path}.{TORCH_NAME.get(leaf, leaf)}")))
    x, y = (ms.Tensor(C.load_array(weights, n)) for n in ("x", "y"))
    return model, x, y


def main():
    args = C.parse_args(__doc__)
    import numprobe
    model, x, y = shared_model(args.weights, args.fault)
    grad_fn = ms.value_and_grad(model, None, model.trainable_params())
    opt = nn.SGD(model.trainable_params(), learning_rate=0.1)
    dbg = numprobe.PrecisionDebugger(config_path=C.write_config(args))
    try:
        for _ in range(args.steps):
            dbg.start(model)
            loss, grads = grad_fn(x, y)
            dbg.stop()
            opt(grads)
            dbg.step()
            print(f"mindspore loss {float(loss.asnumpy()):.7f}")
    finally:
        dbg.close()


if __name__ == "__main__":
    main()
