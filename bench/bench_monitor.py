"""Training monitor overhead (issue 19): prints step-time ratios monitored / unmonitored.

Regimes (torch.set_num_threads(1), OPENBLAS_NUM_THREADS=1):
  transformer  nn.TransformerEncoderLayer(256, 8, batch_first) batch 32 seq 128, fwd+bwd+Adam
  per-op       100 x (Linear(16,16) + GELU), batch 4, fwd+bwd+Adam (host cost per hooked module)
Configs: "weights" = wg_distribution (unreduced + reduced) + mv_distribution + param_distribution
every step; "weights+xy" adds every module's inputs, outputs and their gradients (all_xy). ops:
min, max, norm, mean, nans. Each ratio is the median over rounds of (median monitored step /
median plain step) of that round; rounds alternate plain and monitored models built alike, so
slow drifts of the VM cancel. "cpu ratio" is the same for the process CPU time of the steps (every
thread), which other tenants of a VM disturb far less than wall time. With msprobe importable (torch >= 2: .venv/torch2/bin/python),
msprobe's own TrainerMon is measured the same way, in a child process (it patches torch globally).
Usage: python bench/bench_monitor.py [--rounds=N] [--steps=N] [--only=transformer,per-op]
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
sys.path.insert(0, os.environ.get("NUMPROBE_PYTHONPATH") or
                os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import torch  # noqa: E402

from train_timing import option, step, timed  # noqa: E402

torch.set_num_threads(1)

OPS = ["min", "max", "norm", "mean", "nans"]
CONFIGS = {
    "weights": dict(targets={}, wg_distribution=True, mv_distribution=True, param_distribution=True,
                    ops=OPS),
    "weights+xy": dict(targets={}, wg_distribution=True, mv_distribution=True,
                       param_distribution=True, xy_distribution=True, all_xy=True, ops=OPS),
}


class PerOp(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = torch.nn.Sequential(*[m for _ in range(100)
                                            for m in (torch.nn.Linear(16, 16), torch.nn.GELU())])

    def forward(self, x):
        return self.layers(x)


def build(regime):
    torch.manual_seed(0)
    if regime == "transformer":
        model = torch.nn.TransformerEncoderLayer(256, 8, batch_first=True)
        x = torch.randn(32, 128, 256)
    else:
        model = PerOp()
        x = torch.randn(4, 16)
    return model, torch.optim.Adam(model.parameters(), lr=1e-4), x




def make_monitor(kind, config, model, opt, out):
    path = os.path.join(out, f"{kind}_config.json")
    with open(path, "w") as f:
        json.dump(config, f)
    os.environ["MONITOR_OUTPUT_DIR"] = os.path.join(out, kind)
    if kind == "msprobe":
        from msprobe.pytorch import TrainerMon
        mon = TrainerMon(path, params_have_main_grad=False)
    else:
        import numprobe
        mon = numprobe.TrainerMon(path)
    mon.set_monitor(model, grad_acc_steps=1, optimizer=opt)
    return mon


def measure(kind, regime, config_name, rounds, steps):
    """Median over rounds of monitored / plain step time (one process, both models)."""
    with tempfile.TemporaryDirectory() as out:
        plain = build(regime)
        watched = build(regime)
        make_monitor(kind, CONFIGS[config_name], watched[0], watched[1], out)
        for m in (plain, watched):
            timed(*m, 2)  # warm-up: allocator, Adam state, first files
        ratios, cpu_ratios, plain_t, watched_t = [], [], [], []
        for _ in range(rounds):
            a, a_cpu, _ = timed(*plain, steps)
            b, b_cpu, _ = timed(*watched, steps)
            plain_t.append(a)
            watched_t.append(b)
            ratios.append(b / a)
            cpu_ratios.append(b_cpu / a_cpu)
        return (statistics.median(ratios), statistics.median(cpu_ratios),
                statistics.median(plain_t), statistics.median(watched_t))


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        _, _, kind, regime, config_name, rounds, steps = sys.argv
        print(json.dumps(measure(kind, regime, config_name, int(rounds), int(steps))))
        return
    rounds = int(option("rounds", "5"))
    steps = int(option("steps", "4"))
    regimes = option("only", "transformer,per-op").split(",")
    kinds = ["numprobe"]
    try:
        import msprobe.pytorch  # noqa: F401
        kinds.append("msprobe")
    except Exception as e:  # noqa: BLE001 - msprobe needs torch >= 2
        print(f"(msprobe not measured: {type(e).__name__}: {str(e)[:80]})")
    print(f"torch {torch.__version__}, {rounds} rounds x {steps} steps per side, 1 thread")
    print(f"{'regime':12} {'config':11} {'tool':9} {'plain ms':>9} {'monitored ms':>13} {'ratio':>7} "
          f"{'cpu ratio':>9}")
    for regime in regimes:
        for config_name in CONFIGS:
            for kind in kinds:
                p = subprocess.run([sys.executable, __file__, "--child", kind, regime, config_name,
                                    str(rounds), str(steps)], capture_output=True, text=True)
                if p.returncode != 0:
                    print(f"{regime:12} {config_name:11} {kind:9} failed: {p.stderr.strip()[-200:]}")
                    continue
                ratio, cpu_ratio, a, b = json.loads(p.stdout.strip().splitlines()[-1])
                print(f"{regime:12} {config_name:11} {kind:9} {a * 1e3:9.1f} {b * 1e3:13.1f} "
                      f"{ratio:7.3f}x {cpu_ratio:8.3f}x")


if __name__ == "__main__":
    main()
