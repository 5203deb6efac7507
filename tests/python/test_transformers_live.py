"""Capture on real architectures from Hugging Face transformers: GPT-2 and Llama, built from small configs
with random weights (nothing is downloaded), one AdamW training step each.

Checks what a user of these models relies on: the captured step is bitwise the uncaptured one, the APIs
that make these architectures (scaled-dot-product attention, RMSNorm's rsqrt, SiLU, GPT-2's Conv1D addmm
and tanh-GELU, rotary cos/sin) are recorded forward and backward, construct.json holds the model's module
tree, and two identical runs compare clean. Skipped where transformers is not installed (Debian's torch
1.13 lane), required in `make test-torch2`.
"""
import json
import os
import sys

import pytest

from conftest import PYDIR, live, rank_dir

torch = pytest.importorskip("torch")
transformers = live("transformers")
sys.path.insert(0, str(PYDIR))
import numprobe  # noqa: E402

torch.set_num_threads(1)
VOCAB = 128


def make(arch):
    torch.manual_seed(0)
    if arch == "gpt2":
        cfg = transformers.GPT2Config(n_layer=2, n_embd=64, n_head=4, vocab_size=VOCAB, n_positions=64,
                                      bos_token_id=0, eos_token_id=0)
        return transformers.GPT2LMHeadModel(cfg)
    cfg = transformers.LlamaConfig(hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                                   num_attention_heads=4, num_key_value_heads=2, vocab_size=VOCAB,
                                   max_position_embeddings=64, bos_token_id=0, eos_token_id=0)
    return transformers.LlamaForCausalLM(cfg)


def train_step(arch, dump=None, level="mix"):
    """One AdamW step on a fixed batch; returns (loss, parameters after the step)."""
    model = make(arch)
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    ids = torch.randint(0, VOCAB, (2, 16), generator=torch.Generator().manual_seed(1))
    dbg = numprobe.PrecisionDebugger(dump_path=str(dump), level=level) if dump else None
    if dbg:
        dbg.start(model)
    loss = model(input_ids=ids, labels=ids).loss
    loss.backward()
    opt.step()
    opt.zero_grad()
    if dbg:
        dbg.stop()
        dbg.step()
        dbg.close()
    return loss.detach().clone(), {n: p.detach().clone() for n, p in model.named_parameters()}


# The APIs each architecture is made of, as numprobe names them.
EXPECTED = {
    "gpt2": ["Functional.embedding", "Functional.layer_norm", "Torch.addmm", "Torch.tanh",
             "Functional.scaled_dot_product_attention", "Functional.cross_entropy"],
    "llama": ["Functional.embedding", "Torch.rsqrt", "Functional.silu", "Tensor.cos", "Tensor.sin",
              "Functional.scaled_dot_product_attention", "Functional.linear", "Functional.cross_entropy"],
}
ATTENTION = {"gpt2": "Module.transformer.h.1.attn.GPT2Attention.forward.0",
             "llama": "Module.model.layers.1.self_attn.LlamaAttention.forward.0"}


@pytest.mark.parametrize("arch", ["gpt2", "llama"])
@pytest.mark.parametrize("level", ["L0", "L1", "mix"])
def test_capture_is_bitwise(tmp_path, arch, level):
    ref_loss, ref_params = train_step(arch)
    loss, params = train_step(arch, tmp_path / "dump", level)
    assert torch.equal(loss, ref_loss)
    changed = [n for n in ref_params if not torch.equal(params[n], ref_params[n])]
    assert not changed, f"capture at {level} changed {changed[:5]}"


@pytest.mark.parametrize("arch", ["gpt2", "llama"])
@pytest.mark.parametrize("level", ["L0", "L1", "mix"])
def test_capture_records_the_architecture(tmp_path, arch, level):
    train_step(arch, tmp_path / "dump", level)
    rank = rank_dir(tmp_path / "dump" / "step0")
    data = json.loads((rank / "dump.json").read_text())["data"]
    construct = json.loads((rank / "construct.json").read_text())
    apis = {".".join(name.split(".")[:2]) for name in data if not name.startswith("Module.")}
    if level != "L0":
        missing = [a for a in EXPECTED[arch] if a not in apis]
        assert not missing, f"{arch} {level}: not recorded {missing}; recorded {sorted(apis)}"
        sdpa_bwd = [n for n in data if n.startswith("Functional.scaled_dot_product_attention.")
                    and n.endswith(".backward")]
        assert len(sdpa_bwd) == 2, "one attention backward per layer"
    else:
        assert not apis, f"L0 records modules only, not {sorted(apis)[:5]}"
    if level in ("L0", "mix"):
        # The module tree: layer 1's attention sits in layer 1, which sits in the model.
        attn = ATTENTION[arch]
        assert attn in construct and attn in data
        chain, node = [], attn
        while node:
            chain.append(node)
            node = construct.get(node)
        assert len(chain) >= 3, chain
        assert any(n.startswith("Module.") and ".parameters_grad" in n for n in data)


@pytest.mark.parametrize("arch", ["gpt2", "llama"])
def test_two_identical_runs_compare_clean(tmp_path, cli, arch):
    train_step(arch, tmp_path / "a")
    train_step(arch, tmp_path / "b")
    cli("compare", "-t", tmp_path / "b", "-g", tmp_path / "a", "-o", tmp_path / "cmp")
    summary = json.loads((tmp_path / "cmp" / "summary.json").read_text())
    (pair,) = summary["pairs"]
    assert pair["matched"] > 500 and pair["error"] == 0 and pair["warning"] == 0
    assert pair["unmatched_target"] == 0 and pair["unmatched_golden"] == 0
    assert pair["first_divergence"] is None
