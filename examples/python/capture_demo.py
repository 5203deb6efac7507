"""End-to-end numprobe demo: capture two training runs of a small GPT and find where they part.

Run A is the reference. Run B is the same model, seed and data, except that its layer_norm
kernel ignores the eps it is given and uses 1e-2 (the kind of silent kernel difference that
separates two devices). Both are dumped at level mix with numprobe.PrecisionDebugger;
`numprobe compare` then names the first op that diverged. Each run's final weights are saved
beside its dump (run_a_weights.pt, run_b_weights.pt) for `numprobe ckpt-compare`.
Each run also writes a config_check pack (run_a_config.zip, run_b_config.zip: environment,
packages, hyper-parameters, weights and data per step) for `numprobe config-check -c`.

    PYTHONPATH=python /usr/bin/python3 examples/python/capture_demo.py <out_dir>
"""
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import numprobe  # noqa: E402
import tiny_models  # noqa: E402


_layer_norm = F.layer_norm


def layer_norm_wrong_eps(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    return _layer_norm(input, normalized_shape, weight, bias, 1e-2)


def capture(out_dir, faulty):
    torch.set_num_threads(1)
    model = tiny_models.make_gpt(seed=0)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    dbg = numprobe.PrecisionDebugger(dump_path=out_dir, level="mix", task="statistics")
    checker = numprobe.ConfigChecker(output_zip_path=out_dir + "_config.zip",
                                     hyperparameters={"lr": 0.1, "seed": 0, "steps": 2})
    if faulty:
        F.layer_norm = layer_norm_wrong_eps
        dbg.register_custom_api(F, "layer_norm", "Functional")  # dumped under msprobe's name
    try:
        for step in range(2):
            batch = tiny_models.gpt_batch(step)
            checker.record(model, batch[:1])  # outside the capture: its reductions are not dumped
            dbg.start(model)
            loss = tiny_models.gpt_step(model, opt, batch)
            opt.zero_grad()
            dbg.stop()
            dbg.step()
            print(f"  run {'B' if faulty else 'A'} step {step}: loss {loss.item():.6f}")
    finally:
        dbg.close()
        F.layer_norm = _layer_norm
    torch.save(model.state_dict(), out_dir + "_weights.pt")
    checker.write()


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "demo_out/capture"
    capture(os.path.join(out, "run_a"), faulty=False)
    capture(os.path.join(out, "run_b"), faulty=True)
    print(f"dumps written to {out}/run_a and {out}/run_b")


if __name__ == "__main__":
    main()
