"""Same math, other kernels (issue 36): two runs of one model whose implementation differs (eager against
sdpa attention, a hand-written RMSNorm against a differently-written one, a foreach against a plain
Adam) compare without a first divergence, and a fault after or beside the changed module is still
named at its op. Captures run in their own processes (implementation_capture_script.py); the Llama
pairs need transformers (the torch 2.x lane).
"""
import json
import os
import subprocess
import sys

import pytest

from conftest import CLI, PYDIR, live

pytest.importorskip("torch")
SCRIPT = os.path.join(os.path.dirname(__file__), "implementation_capture_script.py")


def capture(tmp_path, case, variant, fault=""):
    out = tmp_path / f"{case}_{variant}_{fault or 'clean'}"
    env = dict(os.environ, PYTHONPATH=str(PYDIR))
    p = subprocess.run([sys.executable, SCRIPT, case, variant, str(out)] + ([fault] if fault else []),
                       capture_output=True, text=True, env=env, timeout=600)
    assert p.returncode == 0, p.stderr[-3000:]
    return out


def compare(target, golden, out, *options):
    """summary.json's pairs of `numprobe compare`, by step."""
    p = subprocess.run([str(CLI), "compare", "-t", str(target), "-g", str(golden), "-o", str(out),
                        *options], capture_output=True, text=True, timeout=300)
    assert p.returncode in (0, 1), p.stderr
    return {pair["step"]: pair for pair in json.loads((out / "summary.json").read_text())["pairs"]}


def first(pair):
    fd = pair["first_divergence"]
    return fd and (fd["entry"], fd["reason"], fd["module"])


def test_handwritten_against_another_rmsnorm(tmp_path):
    golden = capture(tmp_path, "rmsnorm", "handwritten")
    clean = compare(capture(tmp_path, "rmsnorm", "onecall"), golden, tmp_path / "clean")[0]
    assert clean["coverage"] == "compared"
    assert clean["first_divergence"] is None, first(clean)
    norms = [d for d in clean["implementations"] if ".norm.HandRMSNorm.forward." in d["module"]]
    assert len(norms) == 2, clean["implementations"]
    for d in norms:
        assert d["reason"] == "implementation_differs" and d["verdict"] == "agrees"
        assert "Torch.rsqrt.forward" in d["golden_calls"] and "Torch.sqrt.forward" in d["target_calls"]
        assert d["output_discrepancy"] <= d["tolerance"]
    # A fault in the next block's MLP, beside the other norm: named at its op.
    faulty = compare(capture(tmp_path, "rmsnorm", "onecall", "mlp_scale"), golden, tmp_path / "fault")[0]
    assert faulty["first_divergence"], "the fault was not seen"
    assert faulty["first_divergence"]["module"] == "Module.1.fc2.Linear.forward.0", first(faulty)


def test_a_diverging_implementation_is_the_first_divergence(tmp_path):
    """A LayerNorm written out in calls layer_norm does not make, against one layer_norm call: with
    its eps wrong, the module's results differ beyond noise. Under a layer mapping (-lm) none of its
    calls pairs with the other run's, so walking them one by one names nothing; the module judged
    as a whole is then the first divergence, named at the call that made the differing tensor."""
    golden = capture(tmp_path, "rmsnorm", "functional")
    target = capture(tmp_path, "rmsnorm", "handwritten_ln")
    faulty = capture(tmp_path, "rmsnorm", "handwritten_ln", "norm_eps")
    for options in ((), ("-lm",)):
        clean = compare(target, golden, tmp_path / f"clean{len(options)}", *options)[0]
        assert clean["first_divergence"] is None, (options, first(clean))
        verdicts = [d["verdict"] for d in clean["implementations"] if ".norm.LayerNorm." in d["module"]]
        assert len(verdicts) >= 2 and set(verdicts) == {"agrees"}, clean["implementations"]
    pair = compare(faulty, golden, tmp_path / "fault", "-lm")[0]
    module = "Module.1.norm.LayerNorm.forward.0"
    (norm,) = [d for d in pair["implementations"] if d["module"] == module]
    assert norm["verdict"] == "diverges" and norm["output_discrepancy"] > norm["tolerance"] > 0, norm
    fd = pair["first_divergence"]
    assert fd, "the diverging LayerNorm was not named"
    assert fd["module"] == module and fd["reason"] == "outputs_diverge", first(pair)
    assert fd["entry"].startswith("Tensor.") and fd["output_discrepancy"] == norm["output_discrepancy"]


@pytest.mark.parametrize("variant", ["foreach", "fused"])
def test_foreach_or_fused_against_plain_adam(tmp_path, variant):
    """A multi-tensor (foreach) or fused Adam (torch 2.x; foreach again on 1.13) against a plain
    one: after a bitwise step 0, a fused update rounds otherwise and leaves a few elements of the
    step-1 parameters one ulp apart, within another rounding of the update; a learning rate 1 %
    off or eps 1e-6 for 1e-8 changes the update far beyond that."""
    golden = capture(tmp_path, "optim", "plain")
    clean = compare(capture(tmp_path, "optim", variant), golden, tmp_path / "clean")
    assert sorted(clean) == [0, 1]
    for step, pair in clean.items():
        assert pair["first_divergence"] is None, (step, first(pair))
    for fault in ("lr", "eps"):
        faulty = compare(capture(tmp_path, "optim", variant, fault), golden, tmp_path / fault)
        assert faulty[0]["first_divergence"] is None
        fd = faulty[1]["first_divergence"]
        assert fd and fd["reason"] == "parameters_differ", (fault, fd)
        assert fd["entry"].startswith("Functional.linear."), (fault, fd)


@pytest.mark.parametrize("variant", ["foreach", "fused"])
def test_an_optimizer_step_only_one_run_records(tmp_path, variant):
    """The optimizer step inside the dump: plain Adam's per-parameter calls are dumped (outside
    every module, after the backward), a foreach or fused Adam's kernels leave nothing. Those rows
    have no partner by construction: the pair is still `compared` (not mostly unmatched), with no
    divergence, and a learning rate 1 % off is named at the next step's parameters."""
    golden = capture(tmp_path, "optim", "plain_inside")
    clean = compare(capture(tmp_path, "optim", f"{variant}_inside"), golden, tmp_path / "clean")
    assert sorted(clean) == [0, 1]
    for step, pair in clean.items():
        assert pair["unmatched_optimizer_step"] == pair["unmatched_golden"] > 0, (step, pair)
        assert pair["coverage"] == "compared", (step, pair["coverage"])
        assert pair["first_divergence"] is None, (step, first(pair))
    faulty = compare(capture(tmp_path, "optim", f"{variant}_inside", "lr"), golden, tmp_path / "lr")
    assert faulty[0]["first_divergence"] is None and faulty[0]["coverage"] == "compared"
    fd = faulty[1]["first_divergence"]
    assert fd and fd["reason"] == "parameters_differ" and fd["entry"].startswith("Functional.linear."), fd


def test_llama_eager_against_sdpa_attention(tmp_path):
    live("transformers")
    golden = capture(tmp_path, "llama", "eager")
    sdpa = capture(tmp_path, "llama", "sdpa")
    # Either way round: the mask only eager attention needs is the target's then.
    reverse = compare(golden, sdpa, tmp_path / "reverse")[0]
    assert reverse["first_divergence"] is None, first(reverse)
    clean = compare(sdpa, golden, tmp_path / "clean")[0]
    assert clean["coverage"] == "compared"
    assert clean["first_divergence"] is None, first(clean)
    attention = [d for d in clean["implementations"] if "self_attn.LlamaAttention.forward" in d["module"]]
    assert len(attention) == 2, clean["implementations"]
    for d in attention:
        assert d["verdict"] == "agrees"
        assert "Functional.scaled_dot_product_attention.forward" in d["target_calls"]
        assert "Functional.softmax.forward" in d["golden_calls"]
    # A weight row of layer 1's MLP loaded wrong: named there, after both attentions.
    faulty = compare(capture(tmp_path, "llama", "sdpa", "mlp_weight"), golden, tmp_path / "fault")[0]
    fd = faulty["first_divergence"]
    assert fd, "the fault was not seen"
    assert fd["module"] == "Module.model.layers.1.mlp.down_proj.Linear.forward.0", first(faulty)
    assert fd["entry"].startswith("Functional.linear.") and fd["reason"] == "parameters_differ"


def test_mindspore_against_pytorch_layer_mapping(tmp_path, fixtures):
    """msprobe's cross-framework fixture (13 MindSpore / 12 PyTorch entries) through its layer
    mapping: pairs as before, and the embedding whose MindSpore cell calls logical_or where PyTorch
    calls __or__ and an all_reduce is judged as a whole."""
    d = fixtures / "cross_framework_ms_vs_pt"
    p = subprocess.run([str(CLI), "compare", "-t", d / "mindspore_data", "-g", d / "pytorch_data",
                        "-o", tmp_path, "-lm", d / "layer_mapping.yaml"], capture_output=True, text=True)
    assert p.returncode in (0, 1), p.stderr
    (pair,) = json.loads((tmp_path / "summary.json").read_text())["pairs"]
    assert pair["matched"] == 32
    (embedding,) = [i for i in pair["implementations"] if "VocabParallelEmbedding" in i["module"]]
    assert embedding["target_calls"] == ["Mint.logical_or.forward"]
    assert embedding["golden_calls"] == ["Tensor.__or__.forward", "Distributed.all_reduce.forward"]
