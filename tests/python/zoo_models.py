"""The zoo of real architectures that numprobe's capture is checked to leave bitwise unchanged
(tests/python/test_bitwise_zoo.py; bench/bitwise_zoo.py runs msprobe on the same zoo).

Each model is small (a few seconds for a captured step on one CPU thread), built from a seed with
random weights (nothing is downloaded), and trained for one AdamW step on a fixed batch. Dropout stays
on where the architecture has it, so a capture that consumed random numbers would show too.
"""
import importlib

import torch
import torch.nn as nn
import torch.nn.functional as F

VOCAB = 128


def _optional(name):
    try:
        return importlib.import_module(name)
    except Exception:  # noqa: BLE001 - absent or broken: the models that need it are skipped
        return None


transformers = _optional("transformers")
torchvision = _optional("torchvision")


class LSTMLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, 32)
        self.lstm = nn.LSTM(32, 32, num_layers=2, batch_first=True, dropout=0.1)
        self.head = nn.Linear(32, VOCAB)

    def forward(self, ids):
        out, _ = self.lstm(self.emb(ids))
        return self.head(out)


class EncoderLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, 32)
        layer = nn.TransformerEncoderLayer(32, 4, 64, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, 2)
        self.head = nn.Linear(32, VOCAB)

    def forward(self, ids):
        return self.head(self.encoder(self.emb(ids)))


class InPlaceAfterModules(nn.Module):
    """Outputs of hooked modules modified in place right after the call: a ReLU(inplace=True) module
    on a BatchNorm's output, `+=` of a residual onto a Linear's output, F.relu_ and mul_ on module
    outputs, and an in-place op on a slice (a view) of one."""

    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(16, 32)
        self.bn = nn.BatchNorm1d(32)
        self.act = nn.ReLU(inplace=True)
        self.fc2 = nn.Linear(32, 32)
        self.fc3 = nn.Linear(32, 8)

    def forward(self, x):
        h = self.act(self.bn(self.fc1(x)))
        y = self.fc2(h)
        y += h
        F.relu_(y)
        z = self.fc3(y)
        z.mul_(0.5)
        z[:, :4] += 1.0
        return z


class TiedLM(nn.Module):
    """Shared weights: the output projection is the embedding's matrix, and one LayerNorm's
    parameters serve two places."""

    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, 32)
        self.mix = nn.Linear(32, 32)
        self.norm = nn.LayerNorm(32)
        self.head = nn.Linear(32, VOCAB, bias=False)
        self.head.weight = self.emb.weight

    def forward(self, ids):
        h = self.norm(self.emb(ids))
        h = self.norm(h + torch.tanh(self.mix(h)))
        return self.head(h)


class ReusedBlock(nn.Module):
    """One module called twice in a forward (weights used twice), with a residual around each
    call, so its input's gradient is summed from inside and outside the module."""

    def __init__(self):
        super().__init__()
        self.inp = nn.Linear(16, 32)
        self.block = nn.Sequential(nn.Linear(32, 32), nn.GELU())
        self.out = nn.Linear(32, 8)

    def forward(self, x):
        h = self.inp(x)
        h = h + self.block(h)
        h = h + self.block(h)
        return self.out(h)


def _lm_batch():
    return torch.randint(0, VOCAB, (2, 16), generator=torch.Generator().manual_seed(1))


def _image_batch():
    g = torch.Generator().manual_seed(1)
    return torch.randn(2, 3, 32, 32, generator=g), torch.randint(0, 10, (2,), generator=g)


def _vector_batch():
    g = torch.Generator().manual_seed(1)
    return torch.randn(4, 16, generator=g), torch.randint(0, 8, (4,), generator=g)


def _lm_loss(logits, ids):
    return F.cross_entropy(logits.reshape(-1, VOCAB), ids.reshape(-1))


def _hf_lm(build):
    ids = _lm_batch()
    return build(), lambda m: m(input_ids=ids, labels=ids).loss


def _hf_gpt2():
    cfg = transformers.GPT2Config(n_layer=2, n_embd=32, n_head=4, vocab_size=VOCAB, n_positions=32,
                                  bos_token_id=0, eos_token_id=0)
    return _hf_lm(lambda: transformers.GPT2LMHeadModel(cfg))


def _hf_llama():
    cfg = transformers.LlamaConfig(hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                   num_attention_heads=4, num_key_value_heads=2, vocab_size=VOCAB,
                                   max_position_embeddings=32, bos_token_id=0, eos_token_id=0)
    return _hf_lm(lambda: transformers.LlamaForCausalLM(cfg))


def _hf_bert():
    cfg = transformers.BertConfig(vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2,
                                  num_attention_heads=4, intermediate_size=64,
                                  max_position_embeddings=32)
    return _hf_lm(lambda: transformers.BertForMaskedLM(cfg))


def _hf_t5():
    cfg = transformers.T5Config(vocab_size=VOCAB, d_model=32, d_kv=8, d_ff=64, num_layers=2,
                                num_heads=4, decoder_start_token_id=0, pad_token_id=0)
    return _hf_lm(lambda: transformers.T5ForConditionalGeneration(cfg))


def _vision(build):
    def make():
        x, y = _image_batch()
        return build(), lambda m: F.cross_entropy(m(x), y)
    return make


def _tv_vit():
    return torchvision.models.VisionTransformer(image_size=32, patch_size=8, num_layers=2,
                                                num_heads=2, hidden_dim=32, mlp_dim=64,
                                                num_classes=10)


def _plain_lm(cls):
    def make():
        ids = _lm_batch()
        return cls(), lambda m: _lm_loss(m(ids), ids)
    return make


def _plain_vector(cls):
    def make():
        x, y = _vector_batch()
        return cls(), lambda m: F.cross_entropy(m(x), y)
    return make


# name -> (package it needs or None, maker: () -> (model, loss_of_model))
ZOO = {
    "hf_gpt2": ("transformers", _hf_gpt2),
    "hf_llama": ("transformers", _hf_llama),
    "hf_bert": ("transformers", _hf_bert),
    "hf_t5": ("transformers", _hf_t5),
    "tv_resnet18": ("torchvision", _vision(lambda: torchvision.models.resnet18(num_classes=10))),
    "tv_mobilenet_v3": ("torchvision",
                        _vision(lambda: torchvision.models.mobilenet_v3_small(num_classes=10))),
    "tv_vit": ("torchvision", _vision(_tv_vit)),
    "lstm_lm": (None, _plain_lm(LSTMLM)),
    "transformer_encoder": (None, _plain_lm(EncoderLM)),
    "inplace_after_modules": (None, _plain_vector(InPlaceAfterModules)),
    "tied_weights": (None, _plain_lm(TiedLM)),
    "reused_module": (None, _plain_vector(ReusedBlock)),
}


def missing_package(name):
    """The package a zoo model needs that this interpreter lacks, or None."""
    pkg = ZOO[name][0]
    if pkg is None:
        return None
    return None if {"transformers": transformers, "torchvision": torchvision}[pkg] else pkg


def train_step(name, debugger=None):
    """One AdamW step of zoo model `name` from its seed. `debugger`: a started-per-step object with
    start(model)/stop()/step() (numprobe's or msprobe's PrecisionDebugger), or None. Returns (loss,
    {parameter or buffer name: value after the step})."""
    torch.manual_seed(0)
    model, loss_of = ZOO[name][1]()
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    torch.manual_seed(1)  # dropout
    if debugger is not None:
        debugger.start(model)
    loss = loss_of(model)
    loss.backward()
    opt.step()
    opt.zero_grad()
    if debugger is not None:
        debugger.stop()
        debugger.step()
    state = {f"param:{n}": p.detach().clone() for n, p in model.named_parameters()}
    state.update({f"buffer:{n}": b.detach().clone() for n, b in model.named_buffers()})
    return loss.detach().clone(), state


def differences(a, b):
    """Names of what differs between two train_step results (loss first), bitwise."""
    (loss_a, state_a), (loss_b, state_b) = a, b
    diff = [] if torch.equal(loss_a, loss_b) else ["loss"]
    diff += [n for n in state_a if n not in state_b or not torch.equal(state_a[n], state_b[n])]
    return diff
