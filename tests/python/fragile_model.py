"""The free_benchmark fixture model, torch only: imported by test_free_benchmark.py in either torch
lane and by msprobe_legacy_driver.py in msprobe 8.3.3's venv, so both run the same APIs.

One numerically fragile API, F.tanhshrink over values in [0.2, 0.5] (x - tanh(x): the subtraction
cancels catastrophically in bf16; torch composes it in Python, so its inner tanh is rounded to bf16
in every torch version), beside clean element-wise APIs (tanh, gelu, sigmoid)."""
import torch

F = torch.nn.functional


class Fragile(torch.nn.Module):
    def __init__(self, dropout=0.0):
        super().__init__()
        self.fc = torch.nn.Linear(16, 16)
        self.dropout = dropout

    def forward(self, x, small):
        h = torch.tanh(self.fc(x))
        h = F.dropout(h, self.dropout, self.training)
        g = F.gelu(h)
        n = F.tanhshrink(small)  # the fragile API
        return (g * torch.sigmoid(n * 64)).sum()


def make(dropout=0.0):
    torch.manual_seed(0)
    model = Fragile(dropout).bfloat16()
    x = torch.randn(4, 16).bfloat16()
    small = (torch.rand(4, 16) * 0.3 + 0.2).bfloat16()
    return model, x, small


def train(model, x, small, steps=2, debugger=None, lr=0.1, optimizer_checked=True):
    """SGD steps, each inside debugger start()/stop()/step() where one is given (the optimizer's
    step outside stop() with optimizer_checked False); the losses."""
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    losses = []
    for _ in range(steps):
        if debugger:
            debugger.start()
        opt.zero_grad()
        loss = model(x, small)
        loss.backward()
        if debugger and not optimizer_checked:
            debugger.stop()
        opt.step()
        losses.append(loss.detach().clone())
        if debugger:
            if optimizer_checked:
                debugger.stop()
            debugger.step()
    return losses


def save_state(path, model, x, small):
    """The weights and inputs as float32 arrays (bf16 -> fp32 -> bf16 is exact): another process,
    on another torch version, rebuilds exactly these bf16 tensors with load_state."""
    import numpy as np
    arrays = {k: v.float().numpy() for k, v in model.state_dict().items()}
    np.savez(path, x=x.float().numpy(), small=small.float().numpy(),
             **{"param." + k: v for k, v in arrays.items()})


def load_state(path):
    import numpy as np
    data = np.load(path)
    model = Fragile().bfloat16()
    model.load_state_dict({k[len("param."):]: torch.from_numpy(data[k]).bfloat16()
                           for k in data.files if k.startswith("param.")})
    return (model, torch.from_numpy(data["x"]).bfloat16(),
            torch.from_numpy(data["small"]).bfloat16())
