"""The PyTorch half of the MindSpore/PyTorch twin: a GPT-style model (pre-norm blocks, causal
attention, GELU MLP), one SGD step captured by numprobe. Writes the shared weights and batch when
--weights has none yet (gpt_twin_common.py).

    PYTHONPATH=python /usr/bin/python3 examples/mindspore/gpt_twin_pt.py --weights W --out DUMP
"""
import math
import os
import pathlib
import sys

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpt_twin_common as C  # noqa: E402


class Attention(nn.Module):
    def __init__(self):
        super().__init__()
        self.q, self.k, self.v, self.o = (nn.Linear(C.D, C.D) for _ in range(4))
        self.register_buffer("mask", torch.from_numpy(C.causal_mask()))

    def forward(self, x):
        b, t, d = x.shape
        hd = d // C.HEADS
        q = torch.transpose(self.q(x).reshape(b, t, C.HEADS, hd), 1, 2)
        k = torch.transpose(self.k(x).reshape(b, t, C.HEADS, hd), 1, 2)
        v = torch.transpose(self.v(x).reshape(b, t, C.HEADS, hd), 1, 2)
        att = torch.matmul(q, torch.transpose(k, -2, -1)) / math.sqrt(hd)
        att = F.softmax(att.masked_fill(self.mask, -1e9), dim=-1)
        y = torch.transpose(torch.matmul(att, v), 1, 2).reshape(b, t, d)
        return self.o(y)


class MLP(nn.Module):
    def __init__(self, approximate):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(C.D, 4 * C.D), nn.Linear(4 * C.D, C.D)
        self.approximate = approximate

    def forward(self, x):
        return self.fc2(F.gelu(self.fc1(x), approximate=self.approximate))


class Block(nn.Module):
    def __init__(self, eps, approximate):
        super().__init__()
        self.ln1, self.attn = nn.LayerNorm(C.D, eps=C.EPS), Attention()
        self.ln2, self.mlp = nn.LayerNorm(C.D, eps=eps), MLP(approximate)

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class GPT(nn.Module):
    def __init__(self, fault=""):
        super().__init__()
        self.inp = nn.Linear(C.D_IN, C.D)
        self.blocks = nn.ModuleList(Block(C.block_eps(i, fault), C.block_gelu(i, fault))
                                    for i in range(C.LAYERS))
        self.ln_f, self.head = nn.LayerNorm(C.D, eps=C.EPS), nn.Linear(C.D, C.D_OUT)

    def forward(self, x, y):
        h = self.inp(x)
        for blk in self.blocks:
            h = blk(h)
        return F.mse_loss(self.head(self.ln_f(h)), y)


def shared_model(weights, fault=""):
    """The model and batch from the shared files, drawing and writing them first when absent."""
    torch.manual_seed(0)
    model = GPT(fault)
    if not (pathlib.Path(weights) / "x.npy").exists():
        rng = np.random.default_rng(0)
        arrays = {n: p.detach().numpy() for n, p in model.named_parameters()}
        arrays["x"] = rng.standard_normal((C.BATCH, C.SEQ, C.D_IN))
        arrays["y"] = rng.standard_normal((C.BATCH, C.SEQ, C.D_OUT))
        C.save_arrays(weights, arrays)
    with torch.no_grad():
        for n, p in model.named_parameters():
            p.copy_(torch.from_numpy(C.load_array(weights, n)))
    x, y = (torch.from_numpy(C.load_array(weights, n)) for n in ("x", "y"))
    return model, x, y


def main():
    args = C.parse_args(__doc__)
    torch.set_num_threads(1)
    import numprobe
    model, x, y = shared_model(args.weights, args.fault)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    dbg = numprobe.PrecisionDebugger(config_path=C.write_config(args))
    try:
        for _ in range(args.steps):
            dbg.start(model)
            loss = model(x, y)
            loss.backward()
            dbg.stop()
            opt.step()
            opt.zero_grad()
            dbg.step()
            print(f"pytorch loss {loss.item():.7f}")
    finally:
        dbg.close()


if __name__ == "__main__":
    main()
