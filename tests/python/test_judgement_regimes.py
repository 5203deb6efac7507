"""First divergence in the comparisons users make most (issue 30), on the real models of
bench/diagnosis, each capture its own process:
- the same program on another CPU generation (emulated here: scalar ATen kernels, older oneDNN
  and OpenBLAS kernels round matmuls, convolutions, LSTMs and random initialisers otherwise);
- an fp32 golden against a bf16 or fp16 autocast target (mixed precision);
- a later step, after a fault present from step 0 made the runs drift, with and without the
  earlier steps dumped.
Clean pairs must give no first divergence; a fault must still be named on top of the noise."""
import json
import os
import shutil
import subprocess
import sys

import pytest

from conftest import CLI, PYDIR, ROOT, compare_summary, suite_capture

torch = pytest.importorskip("torch")
BENCH = ROOT / "bench" / "diagnosis"
sys.path.insert(0, str(BENCH))
import suite  # noqa: E402

# Three x86-64 generations: this machine's own kernels, AVX2, and SSE4.1 with scalar ATen.
# OPENBLAS_CORETYPE replaces a value the machine may set already.
CPUS = {
    "native": {},
    "avx2": {"ATEN_CPU_CAPABILITY": "avx2", "ONEDNN_MAX_CPU_ISA": "AVX2",
             "OPENBLAS_CORETYPE": "Haswell"},
    "old": {"ATEN_CPU_CAPABILITY": "default", "ONEDNN_MAX_CPU_ISA": "SSE41",
            "OPENBLAS_CORETYPE": "Prescott"},
}
FAULTS = {f.name: f for f in suite.FAULTS}
TORCH2 = not torch.__version__.startswith("1.")


_AUTOCAST_OK = {}


def require_autocast(low):
    """Skips (saying why) where this CPU's kernels have no `low` autocast: oneDNN has no bf16
    convolution, matmul or LSTM below AVX-512 ("could not create a primitive descriptor"), as on
    the emulated older CPU; torch 1.13's CPU autocast has no float16."""
    if low not in _AUTOCAST_OK:
        code = ("import torch, torch.nn.functional as F\n"
                f"with torch.autocast('cpu', dtype=torch.{'bfloat16' if low == 'bf16' else 'float16'}):\n"
                "    F.linear(torch.randn(4, 8), torch.randn(3, 8))\n"
                "    F.conv2d(torch.randn(1, 3, 8, 8), torch.randn(4, 3, 3, 3))\n"
                "    torch.nn.LSTM(8, 8)(torch.randn(2, 1, 8))\n")
        p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
        _AUTOCAST_OK[low] = (p.returncode == 0, (p.stderr.strip().splitlines() or [""])[-1])
    ok, why = _AUTOCAST_OK[low]
    if not ok:
        pytest.skip(f"no {low} autocast kernels on this CPU: {why}")


def capture(out, model, steps=1, fault="", cpu="native", **opts):
    if out.exists():
        return out
    return suite_capture(out, model, steps, fault, env=CPUS[cpu], **opts)


def compare(target, golden, out):
    summary, stdout = compare_summary(target, golden, out)
    return summary["pairs"], stdout


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    return tmp_path_factory.mktemp("regimes")


def assert_clean(pairs, stdout):
    assert pairs, stdout
    for pair in pairs:
        assert pair["first_divergence"] is None and pair["suspects"] == [], (
            pair["suspects"][:2], stdout)
    assert "no divergence beyond noise" in stdout


def assert_named(pair, fault, stdout):
    fd = pair["first_divergence"]
    assert fd is not None, stdout
    assert fd["entry"] in fault.accept, (fd["entry"], fd["reason"], sorted(fault.accept))


# ---- another CPU generation ----------------------------------------------------------------------

@pytest.mark.parametrize("model", ["gpt", "lstm", "resnet"])
@pytest.mark.parametrize("cpu", ["avx2", "old"])
def test_another_cpu_generation_is_noise(work, model, cpu):
    """Two steps: initial weights, the batch, GEMMs, convolutions and the LSTM round their last
    bits otherwise; no step may show a first divergence."""
    golden = capture(work / f"{model}_2", model, steps=2)
    target = capture(work / f"{model}_2_{cpu}", model, steps=2, cpu=cpu)
    pairs, stdout = compare(target, golden, work / f"cmp_{model}_{cpu}")
    assert len(pairs) == 2
    assert_clean(pairs, stdout)


@pytest.mark.parametrize("name", ["weight_row", "lstm_weight_row", "conv_filter", "gelu_tanh"])
def test_a_small_fault_on_another_cpu_is_named(work, name):
    """A weight row or filter scaled by 1e-4, GELU's tanh approximation: named through the other
    CPU's rounding."""
    fault = FAULTS[name]
    golden = capture(work / f"{fault.model}_1", fault.model)
    target = capture(work / f"{fault.model}_1_old_{name}", fault.model, fault=name, cpu="old")
    (pair,), stdout = compare(target, golden, work / f"cmp_old_{name}")
    assert_named(pair, fault, stdout)


# ---- fp32 golden, bf16/fp16 target -----------------------------------------------------------------

# CPU autocast in float16 exists from torch 2.x on; its LSTM has no float16 kernel (oneDNN), and
# the GPT's scores overflow float16 (next test).
NO_FP16 = pytest.mark.skipif(not TORCH2, reason="torch 1.13's CPU autocast has no float16")
MIXED = [("gpt", "bf16"), ("lstm", "bf16"), ("resnet", "bf16"),
         pytest.param("resnet", "fp16", marks=NO_FP16),
         pytest.param("mobilenet", "fp16", marks=NO_FP16)]


@pytest.mark.parametrize("model,low", MIXED)
def test_mixed_precision_pair_is_judged_as_one(work, model, low):
    """Autocast makes the contractions' outputs bf16/fp16: no dtype finding, no false divergence,
    and the pair says which regime it was judged in."""
    require_autocast(low)
    golden = capture(work / f"{model}_1", model)
    target = capture(work / f"{model}_1_{low}", model, **{low: True})
    pairs, stdout = compare(target, golden, work / f"cmp_{model}_{low}")
    assert_clean(pairs, stdout)
    assert pairs[0]["regime"] == "mixed_precision", pairs[0]["regime"]


@pytest.mark.parametrize("name", ["gpt_no_sqrt_d", "weight_row", "pos_weights", "gpt_qk_swapped"])
def test_a_fault_beyond_low_precision_noise_is_named(work, name):
    require_autocast("bf16")
    fault = FAULTS[name]
    golden = capture(work / f"{fault.model}_1", fault.model)
    target = capture(work / f"{fault.model}_1_bf16_{name}", fault.model, fault=name, bf16=True)
    (pair,), stdout = compare(target, golden, work / f"cmp_bf16_{name}")
    assert_named(pair, fault, stdout)
    assert pair["first_divergence"]["regime"] == "mixed_precision"


def capture_l0(out, model, fault="", **opts):
    """A module-only (L0) capture, as locate's first round writes: run_one's config replaced
    through NUMPROBE_CONFIG."""
    if out.exists():
        return out
    out.mkdir(parents=True)
    cfg = out / "l0_config.json"
    cfg.write_text(json.dumps({"task": "statistics", "level": "L0", "dump_path": str(out)}))
    return suite_capture(out, model, 1, fault, env={"NUMPROBE_CONFIG": str(cfg)}, **opts)


@pytest.mark.parametrize("model", ["gpt", "resnet"])
def test_a_module_only_mixed_precision_pair_is_judged_as_one(work, model):
    """At L0 no API contraction is dumped: the contraction modules (Linear, Conv2d) say the pair
    is mixed precision. Regression: locate's first round named the first Linear's dtype
    (dtype_differs) on every bf16 pair, and never reached the fault."""
    require_autocast("bf16")
    golden = capture_l0(work / f"{model}_l0", model)
    target = capture_l0(work / f"{model}_l0_bf16", model, bf16=True)
    pairs, stdout = compare(target, golden, work / f"cmp_{model}_l0_bf16")
    assert_clean(pairs, stdout)
    assert pairs[0]["regime"] == "mixed_precision", pairs[0]["regime"]


@NO_FP16
def test_an_fp16_overflow_is_named_not_excused(work):
    """The GPT scales its masked attention scores by 1e5 (golden fp32: 1.4e5, fine); in float16
    that overflows to inf. Real, and named where it happens."""
    require_autocast("fp16")
    golden = capture(work / "gpt_1", "gpt")
    target = capture(work / "gpt_1_fp16", "gpt", fp16=True)
    (pair,), stdout = compare(target, golden, work / "cmp_gpt_fp16")
    fd = pair["first_divergence"]
    assert fd is not None and fd["entry"] == "Tensor.__mul__.1.forward", (fd, stdout)
    assert fd["reason"] == "outputs_diverge" and fd["regime"] == "mixed_precision"


def test_one_layer_in_bf16_stays_a_dtype_finding(work):
    """A single layer run in bf16 by mistake is not a mixed-precision pair: the dtype change is the
    finding."""
    require_autocast("bf16")
    fault = FAULTS["layer4_bf16"]
    golden = capture(work / "resnet_1", "resnet")
    target = capture(work / "resnet_1_layer4_bf16", "resnet", fault="layer4_bf16")
    (pair,), stdout = compare(target, golden, work / "cmp_layer4_bf16")
    assert_named(pair, fault, stdout)
    assert pair["regime"] != "mixed_precision"


# ---- later steps ----------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def demo_runs(work):
    """make demo's two GPT runs (run B's layer_norm kernel ignores its eps: 1e-2), two steps."""
    out = work / "demo"
    p = subprocess.run([sys.executable, str(ROOT / "examples" / "python" / "capture_demo.py"),
                        str(out)], env=dict(os.environ, PYTHONPATH=str(PYDIR)),
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stdout + p.stderr
    return out


def test_a_persistent_fault_is_named_at_every_step(demo_runs, work):
    pairs, stdout = compare(demo_runs / "run_b", demo_runs / "run_a", work / "cmp_demo")
    assert len(pairs) == 2
    for pair in pairs:
        fd = pair["first_divergence"]
        assert fd is not None and fd["entry"] == "Functional.layer_norm.0.forward", (fd, stdout)
    assert pairs[1]["first_divergence"]["reason"] == "outputs_diverge"


def test_a_later_step_dumped_alone_is_judged_after_unknown_drift(demo_runs, work):
    """Only step 1 dumped (msprobe's `step: [1]`): its parameters already differ by the drift of
    step 0, which no dump shows. The kernel that ignores its eps is still named, and its drifted
    weights are not."""
    only = {}
    for run in ("run_a", "run_b"):
        only[run] = work / f"step1_only_{run}"
        shutil.rmtree(only[run], ignore_errors=True)
        shutil.copytree(demo_runs / run / "step1", only[run] / "step1")
    (pair,), stdout = compare(only["run_b"], only["run_a"], work / "cmp_step1_only")
    fd = pair["first_divergence"]
    assert fd is not None and fd["entry"] == "Functional.layer_norm.0.forward", (fd, stdout)
    assert fd["reason"] == "outputs_diverge"


def test_a_later_step_of_drifted_clean_runs_is_noise(work):
    """Threads 1 vs 2 for three steps on another CPU generation, step 2 dumped alone."""
    golden = capture(work / "gpt_3_at2", "gpt", steps=3, dump_step=2)
    target = capture(work / "gpt_3_at2_old", "gpt", steps=3, dump_step=2, cpu="old", threads=2)
    pairs, stdout = compare(target, golden, work / "cmp_gpt_at2")
    assert len(pairs) == 1
    assert_clean(pairs, stdout)


def test_prior_steps_bitwise_holds_a_later_steps_weights_exactly(work):
    """An embedding frozen by mistake shows first in step 1's weights. Step 1 dumped alone: by
    default the drift before it is unknown, so its weights are no evidence; `--prior-steps bitwise`
    (what locate passes when its first round saw step 0 agree bit for bit) names their first
    consumer. A value other than unknown/bitwise is an error naming the flag."""
    fault = FAULTS["emb_grad_zero"]
    golden = capture(work / "lstm_2_at1", "lstm", steps=2, dump_step=1)
    target = capture(work / "lstm_2_at1_emb_grad_zero", "lstm", steps=2, dump_step=1,
                     fault="emb_grad_zero")
    out = work / "cmp_prior"
    p = subprocess.run([str(CLI), "compare", "-t", str(target), "-g", str(golden), "-o", str(out),
                        "--prior-steps", "bitwise"], capture_output=True, text=True)
    assert p.returncode == 0, p.stdout + p.stderr
    (pair,) = json.loads((out / "summary.json").read_text())["pairs"]
    assert pair["step"] == 1
    assert_named(pair, fault, p.stdout)
    assert pair["first_divergence"]["reason"] == "parameters_differ"
    (default,), stdout = compare(target, golden, work / "cmp_prior_default")
    assert default["first_divergence"] is None or default["first_divergence"]["entry"] not in (
        "Functional.embedding.0.forward",), stdout
    bad = subprocess.run([str(CLI), "compare", "-t", str(target), "-g", str(golden), "-o",
                          str(work / "cmp_prior_bad"), "--prior-steps", "same"],
                         capture_output=True, text=True)
    assert bad.returncode != 0 and "--prior-steps" in bad.stderr, bad.stderr
