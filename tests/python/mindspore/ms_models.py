"""Small MindSpore models and one training step, captured or not, for the MindSpore lane's tests."""
import math

import numpy as np
import mindspore as ms
from mindspore import nn, ops

D = 16


class Block(nn.Cell):
    """A pre-norm Transformer block: attention (Dense q/k/v/o, softmax), GELU MLP, LayerNorms."""

    def __init__(self, eps=1e-5):
        super().__init__()
        self.ln1 = nn.LayerNorm((D,), epsilon=1e-5)
        self.q = nn.Dense(D, D)
        self.k = nn.Dense(D, D)
        self.v = nn.Dense(D, D)
        self.o = nn.Dense(D, D)
        self.ln2 = nn.LayerNorm((D,), epsilon=eps)
        self.fc1 = nn.Dense(D, 2 * D)
        self.fc2 = nn.Dense(2 * D, D)

    def construct(self, x):
        h = self.ln1(x)
        q, k, v = self.q(h), self.k(h), self.v(h)
        att = ops.softmax(ops.matmul(q, k.swapaxes(-1, -2)) / math.sqrt(D), axis=-1)
        x = x + self.o(ops.matmul(att, v))
        return x + self.fc2(ops.gelu(self.fc1(self.ln2(x))))


class Net(nn.Cell):
    def __init__(self, faulty_eps=None):
        super().__init__()
        self.embed = nn.Dense(8, D)
        self.blocks = nn.CellList([Block(), Block(eps=faulty_eps or 1e-5)])
        self.head = nn.Dense(D, 4)

    def construct(self, x, y):
        h = self.embed(x)
        for b in self.blocks:
            h = b(h)
        return ops.mse_loss(self.head(h), y)


def make(seed=0, faulty_eps=None):
    """The model with fixed weights (the same for every seed-0 model, faulty or not) and a batch."""
    ms.set_device("CPU")
    ms.set_seed(seed)
    np.random.seed(seed)
    net = Net(faulty_eps)
    rng = np.random.default_rng(seed)
    for p in net.trainable_params():
        p.set_data(ms.Tensor(rng.standard_normal(p.shape).astype(np.float32) * 0.3))
    x = ms.Tensor(rng.standard_normal((2, 5, 8)).astype(np.float32))
    y = ms.Tensor(rng.standard_normal((2, 5, 4)).astype(np.float32))
    return net, x, y


def train_step(net, x, y, debugger=None, steps=1):
    """value_and_grad and an SGD update per step; returns the losses and the last gradients as
    numpy arrays. With a debugger: start(net) / stop() / step() around each step."""
    grad_fn = ms.value_and_grad(net, None, net.trainable_params())
    opt = nn.SGD(net.trainable_params(), learning_rate=0.1)
    losses, grads = [], None
    for _ in range(steps):
        if debugger is not None:
            debugger.start(net)
        loss, g = grad_fn(x, y)
        if debugger is not None:
            debugger.stop()
        opt(g)
        if debugger is not None:
            debugger.step()
        losses.append(loss.asnumpy())
        grads = [t.asnumpy() for t in g]
    return losses, grads


class Scaled(nn.Cell):
    """A cell called with a keyword argument."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Dense(D, D)

    def construct(self, x, scale=1.0):
        return self.fc(x) * scale
