"""One capture of a model whose implementation can be switched without changing its math (issue 36):
`python implementation_capture_script.py <case> <variant> <dump_dir> [fault]`.

Cases and variants:
- llama eager|sdpa: a transformers Llama from a small config (no hub) with that attention
  implementation, one training step (torch 2.x lane only: transformers is not installed for 1.13);
- rmsnorm handwritten|onecall: a small pre-norm MLP stack whose RMSNorm is written as
  x * rsqrt(mean(x^2) + eps) * w, or as one differently-written composite (x / sqrt(...));
  rmsnorm functional|handwritten_ln: the same stack with a LayerNorm, one layer_norm call or
  written out in calls layer_norm does not make;
- optim plain|foreach|fused: an MLP trained two steps with Adam, forward and backward dumped, the
  optimizer step between the dumps (torch 1.13 has no fused CPU Adam: `fused` there means foreach);
  `<variant>_inside` dumps the optimizer step too (outside every module, after the backward);
  fault `lr`: a learning rate 1 % higher; `eps`: Adam's eps 1e-6 instead of 1e-8.
faults: llama `mlp_weight`: one row of layer 1's MLP down projection loaded x (1 + 1e-3); rmsnorm
`mlp_scale`: block 1's fc2 output scaled by (1 + 1e-3) in a forward hook (one extra call); rmsnorm
`norm_eps`: block 1's norm with eps 1e-2 (inside the module written otherwise).
Each capture runs in its own process so nothing leaks between the two sides.
"""
import sys

import torch

import numprobe

torch.set_num_threads(1)


def llama(variant, fault):
    import transformers

    torch.manual_seed(0)
    cfg = transformers.LlamaConfig(hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                                   num_attention_heads=4, num_key_value_heads=2, vocab_size=128,
                                   max_position_embeddings=64, bos_token_id=0, eos_token_id=0,
                                   attn_implementation=variant)
    model = transformers.LlamaForCausalLM(cfg)
    if fault == "mlp_weight":
        with torch.no_grad():
            model.model.layers[1].mlp.down_proj.weight[0] *= 1 + 1e-3
    ids = torch.randint(0, 128, (2, 16), generator=torch.Generator().manual_seed(1))
    return model, lambda: model(input_ids=ids, labels=ids).loss


class HandRMSNorm(torch.nn.Module):
    def __init__(self, d, onecall, eps=1e-6):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.ones(d))
        self.onecall, self.eps = onecall, eps

    def forward(self, x):
        if self.onecall:
            # The same math in other calls: a division by the root mean square (one reduction via
            # torch.linalg.vector_norm would differ more; this stays within rounding).
            return self.weight * (x / torch.sqrt(torch.mean(x * x, dim=-1, keepdim=True) + self.eps))
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


class LayerNorm(torch.nn.Module):
    def __init__(self, d, functional, eps=1e-5):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.ones(d))
        self.bias = torch.nn.Parameter(torch.zeros(d))
        self.functional, self.eps = functional, eps

    def forward(self, x):
        if self.functional:
            return torch.nn.functional.layer_norm(x, x.shape[-1:], self.weight, self.bias, self.eps)
        # No call in common with layer_norm's one.
        centred = x - x.mean(-1, keepdim=True)
        var = (centred * centred).mean(-1, keepdim=True)
        return centred * torch.rsqrt(var + self.eps) * self.weight + self.bias


class Block(torch.nn.Module):
    def __init__(self, d, norm):
        super().__init__()
        self.norm = norm
        self.fc1 = torch.nn.Linear(d, 2 * d)
        self.fc2 = torch.nn.Linear(2 * d, d)

    def forward(self, x):
        return x + self.fc2(torch.nn.functional.silu(self.fc1(self.norm(x))))


def rmsnorm(variant, fault):
    torch.manual_seed(0)
    if variant in ("functional", "handwritten_ln"):
        def norm():
            return LayerNorm(32, variant == "functional")
    else:
        def norm():
            return HandRMSNorm(32, variant == "onecall")
    model = torch.nn.Sequential(Block(32, norm()), Block(32, norm()), torch.nn.Linear(32, 10))
    if fault == "mlp_scale":
        model[1].fc2.register_forward_hook(lambda m, i, o: o * (1 + 1e-3))
    if fault == "norm_eps":
        model[1].norm.eps = 1e-2
    x = torch.randn(8, 32, generator=torch.Generator().manual_seed(1))
    y = torch.randint(0, 10, (8,), generator=torch.Generator().manual_seed(2))
    return model, lambda: torch.nn.functional.cross_entropy(model(x), y)


def run(case, variant, dump, fault=""):
    if case == "optim":
        return run_optim(variant, dump, fault)
    model, loss_fn = {"llama": llama, "rmsnorm": rmsnorm}[case](variant, fault)
    model.train()
    dbg = numprobe.PrecisionDebugger(dump_path=dump, level="mix")
    dbg.start(model)
    loss_fn().backward()
    dbg.stop()
    dbg.step()
    dbg.close()


def run_optim(variant, dump, fault):
    # `<variant>_inside`: the optimizer step inside the dumped span (stop() after step()).
    inside = variant.endswith("_inside")
    variant = variant.removesuffix("_inside")
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))
    kw = {}
    if variant == "foreach":
        kw["foreach"] = True
    elif variant == "fused":
        major = int(torch.__version__.split(".")[0])
        kw["fused" if major >= 2 else "foreach"] = True
    else:
        kw["foreach"] = False
    lr = 1e-2 * (1 + 1e-2) if fault == "lr" else 1e-2
    opt = torch.optim.Adam(model.parameters(), lr=lr, eps=1e-6 if fault == "eps" else 1e-8, **kw)
    x = torch.randn(8, 16, generator=torch.Generator().manual_seed(1))
    y = torch.randint(0, 4, (8,), generator=torch.Generator().manual_seed(2))
    dbg = numprobe.PrecisionDebugger(dump_path=dump, level="mix")
    for _ in range(2):
        dbg.start(model)
        torch.nn.functional.cross_entropy(model(x), y).backward()
        if not inside:
            dbg.stop()
        opt.step()
        opt.zero_grad()
        if inside:
            dbg.stop()
        dbg.step()
    dbg.close()


if __name__ == "__main__":
    run(*sys.argv[1:])
