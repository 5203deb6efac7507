"""numprobe.TrainerMon on a short training run with one bad batch (make demo).

    python examples/python/monitor_demo.py <config.json> [steps] [bad_step]

A small Transformer encoder classifier trains on random tokens with AdamW; at bad_step
(default 12) the batch is scaled x40 (a data-pipeline bug: unnormalised features), which the
anomaly rules of the config should flag. Output under $MONITOR_OUTPUT_DIR (./monitor_output); then
`numprobe monitor-analyse` names the first anomaly and `numprobe monitor-report` draws the curves.
"""
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import numprobe  # noqa: E402


class Classifier(torch.nn.Module):
    def __init__(self, d=32, classes=5):
        super().__init__()
        self.proj = torch.nn.Linear(8, d)
        self.encoder = torch.nn.TransformerEncoderLayer(d, 4, 64, dropout=0.0, batch_first=True)
        self.head = torch.nn.Linear(d, classes)

    def forward(self, x):
        return self.head(self.encoder(self.proj(x)).mean(dim=1))


def main():
    config = sys.argv[1]
    steps = int(sys.argv[2]) if len(sys.argv) > 2 else 20
    bad_step = int(sys.argv[3]) if len(sys.argv) > 3 else 12
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = Classifier()
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    mon = numprobe.TrainerMon(config)
    mon.set_monitor(model, grad_acc_steps=1, optimizer=opt)
    for step in range(steps):
        x = torch.randn(16, 10, 8)
        y = torch.randint(0, 5, (16,))
        if step == bad_step:
            x = x * 40  # the bad batch
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        print(f"step {step:2d} loss {loss.item():.4f}")
    print(f"{len(mon.anomalies)} anomalies reported; files: {os.environ.get('MONITOR_OUTPUT_DIR', './monitor_output')}")


if __name__ == "__main__":
    main()
