"""Small real models for the capture demo and tests: a GPT-style decoder and torchvision ResNet-18."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch import relu  # imported by value on purpose: capture must still see it


class Block(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.ln1 = nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.ln2 = nn.LayerNorm(d)
        self.fc1 = nn.Linear(d, 4 * d)
        self.fc2 = nn.Linear(4 * d, d)
        self.heads = heads

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
        q = q.view(b, t, self.heads, d // self.heads).transpose(1, 2)
        k = k.view(b, t, self.heads, d // self.heads).transpose(1, 2)
        v = v.view(b, t, self.heads, d // self.heads).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) / math.sqrt(d // self.heads)
        mask = torch.triu(torch.ones(t, t, dtype=torch.bool, device=x.device), diagonal=1)
        att = F.softmax(att.masked_fill(mask, float("-inf")), dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(b, t, d)
        x = x + self.proj(y)
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))


class TinyGPT(nn.Module):
    def __init__(self, vocab=64, d=32, heads=4, layers=2, ctx=16):
        super().__init__()
        self.tok = nn.Embedding(vocab, d)
        self.pos = nn.Embedding(ctx, d)
        self.blocks = nn.ModuleList([Block(d, heads) for _ in range(layers)])
        self.ln = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab)

    def forward(self, idx):
        t = idx.shape[1]
        x = self.tok(idx) + self.pos(torch.arange(t, device=idx.device))
        for blk in self.blocks:
            x = blk(x)
        return self.head(relu(self.ln(x)))


def gpt_batch(seed=0, vocab=64, b=2, t=16):
    g = torch.Generator().manual_seed(seed)
    idx = torch.randint(0, vocab, (b, t), generator=g)
    return idx, torch.randint(0, vocab, (b, t), generator=g)


def gpt_step(model, opt, batch):
    idx, target = batch
    logits = model(idx)
    loss = F.cross_entropy(logits.view(-1, logits.shape[-1]), target.view(-1))
    loss.backward()
    opt.step()
    return loss


def make_gpt(seed=0):
    torch.manual_seed(seed)
    return TinyGPT()


def make_resnet18(seed=0):
    import torchvision
    torch.manual_seed(seed)
    return torchvision.models.resnet18(num_classes=10)


def resnet_batch(seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(2, 3, 32, 32, generator=g), torch.randint(0, 10, (2,), generator=g)


def resnet_step(model, opt, batch):
    x, y = batch
    loss = F.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    return loss
