"""The suite's five models, each with named fault switches (bench/diagnosis/README.md).

A fault is a string; the model's code asks `fault.on("name")` where the fault would live, so the
golden run (no fault) and the target run execute the same code everywhere else. Faults that must
change data without any captured op (an uncaptured kernel, an in-place write through another
library) write through numpy views (the `Tensor.numpy` call is recorded: it is in msprobe's API set; the write is not).
A few switches are not faults but one side of a noise-only pair (`noise_*`: another memory format
or convolution backend, valid either way).
"""
import math

import numpy as np

import torch
import torch.nn as nn
import torch.nn.functional as F


class Fault:
    """The one fault of this run ("" for none)."""

    def __init__(self, name=""):
        self.name = name

    def on(self, name):
        return self.name == name


def scale_silently(t, factor, rows=None):
    """Multiplies t in place through a numpy view: no captured op, no autograd record. The
    equivalent of a buggy extension kernel or a write through another framework."""
    a = t.numpy(force=True)
    if rows is None:
        a *= factor
    else:
        a[rows] *= factor


class GradScale(torch.autograd.Function):
    """Identity forward; the backward multiplies the gradient by `s` with a captured op. Both runs
    use it (same structure); a fault changes `s` (a wrong gradient scaling in a custom backward)."""

    @staticmethod
    def forward(ctx, x, s):
        ctx.s = s
        return x.view_as(x)

    @staticmethod
    def backward(ctx, g):
        return g * ctx.s, None


class GeluTanhBackward(torch.autograd.Function):
    """A hand-written GELU (as in fused bias-GELU kernels) whose forward is the exact erf GELU but
    whose backward is the derivative of the tanh approximation: forward equal, backward off by up
    to ~1e-3 relative. The forward's F.gelu is recorded; the backward's ops run inside backward."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return F.gelu(x, approximate="none")

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        c = math.sqrt(2.0 / math.pi)
        t = torch.tanh(c * (x + 0.044715 * x * x * x))
        d = 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * c * (1.0 + 3 * 0.044715 * x * x)
        return g * d


class ExtKernel(torch.autograd.Function):
    """A stand-in for an uncaptured extension kernel (computed in numpy, invisible to the dumper):
    y = x * (1 + bias). The fault gives it a 1e-4 relative error; its module entry is the only
    place the runs can be told apart."""

    @staticmethod
    def forward(ctx, x, bias):
        y = torch.from_numpy(x.numpy(force=True) * (1.0 + bias))
        return y

    @staticmethod
    def backward(ctx, g):
        return g, None


class ExtScale(nn.Module):
    def __init__(self, fault):
        super().__init__()
        self.fault = fault

    def forward(self, x):
        return ExtKernel.apply(x, 1e-4 if self.fault.on("ext_kernel") else 0.0)


# ---- GPT-style decoder ---------------------------------------------------------------------------
class Attention(nn.Module):
    def __init__(self, d, heads, fault, index):
        super().__init__()
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.heads, self.fault, self.index = heads, fault, index

    def forward(self, x):
        f, i = self.fault, self.index
        b, t, d = x.shape
        hd = d // self.heads
        q, k, v = self.qkv(x).split(d, dim=2)
        if f.on("gpt_qk_swapped") and i == 1:
            q, k = k, q  # held2: q and k taken from the fused projection in the wrong order
        q, k, v = (z.reshape(b, t, self.heads, hd).transpose(1, 2) for z in (q, k, v))
        scale = 1.0 / math.sqrt(hd)
        if f.on("gpt_no_sqrt_d") and i == 0:
            scale = 1.0  # held out: scores not divided by sqrt(head dim)
        if f.on("attn_scale") and i == 1:
            scale *= 1 + 1e-4  # a rescale that only shows in one op's scalar argument
        att = torch.matmul(q, k.transpose(-2, -1)) * scale
        diag = 2 if f.on("wrong_mask") and i == 0 else 1
        mask = torch.triu(torch.ones(t, t, dtype=torch.bool), diagonal=diag)
        fill = -10.0 if f.on("gpt_mask_fill_small") and i == 1 else float("-inf")
        att = att.masked_fill(mask, fill)  # held3 gpt_mask_fill_small: a finite "large negative"
        if f.on("fp16_overflow") and i == 1:
            # A scaled softmax done in fp16 in the target: exp of large scores overflows.
            att = (att.half() * 1e5).float()
        else:
            att = att * 1e5
        att = att / 1e5
        if f.on("softmax_dim") and i == 1:
            p = F.softmax(att, dim=-2)
        elif f.on("softmax_fp64") and i == 0:
            p = F.softmax(att.double(), dim=-1).float()
        else:
            p = F.softmax(att, dim=-1)
        if f.on("extra_dropout") and i == 1:
            p = F.dropout(p, p=0.1, training=True)
        if f.on("gpt_attn_detach") and i == 1:
            p = p.detach()  # held out: no gradient to q and k (detach is not in the API set)
        y = torch.matmul(p, v)
        if f.on("gpt_heads_merge") and i == 0:
            y = y.reshape(b, t, d)  # held2: heads merged without moving them next to the features
        else:
            y = y.transpose(1, 2).reshape(b, t, d)
        if f.on("bf16_roundtrip") and i == 0:
            y = y.to(torch.bfloat16).to(torch.float32)
        return self.proj(y)


class Mlp(nn.Module):
    def __init__(self, d, fault, index):
        super().__init__()
        self.fc1 = nn.Linear(d, 4 * d)
        self.fc2 = nn.Linear(4 * d, d)
        self.fault, self.index = fault, index

    def forward(self, x):
        f, i = self.fault, self.index
        h = self.fc1(x)
        if f.on("silent_rescale") and i == 1:
            scale_silently(h, 1 + 1e-4)
        approximate = "tanh" if f.on("gelu_tanh") and i == 1 else "none"
        if f.on("gpt_gelu_custom_bwd") and i == 1:
            h = GeluTanhBackward.apply(h)  # held2: exact forward, tanh-approximation backward
        else:
            h = F.gelu(h, approximate=approximate)
        s = 1 + 1e-4 if f.on("grad_scale") and i == 0 else 1.0
        h = GradScale.apply(h, s)
        return self.fc2(h)


class Block(nn.Module):
    def __init__(self, d, heads, fault, index):
        super().__init__()
        self.ln1 = nn.LayerNorm(d)
        self.attn = Attention(d, heads, fault, index)
        self.ln2 = nn.LayerNorm(d, eps=1e-3 if fault.on("ln_eps") and index == 0 else 1e-5)
        self.mlp = Mlp(d, fault, index)
        self.ext = ExtScale(fault) if index == 1 else None
        if fault.on("gpt_ln_no_bias") and index == 1:
            self.ln1.bias = None  # held out: LayerNorm with weight only (torch >= 2.1's bias=False)
        self.fault, self.index = fault, index

    def forward(self, x):
        a = self.attn(self.ln1(x))
        # held out: the attention residual of block 0 dropped
        x = a if self.fault.on("gpt_residual_drop") and self.index == 0 else x + a
        x = x + self.mlp(self.ln2(x))
        return self.ext(x) if self.ext is not None else x


class Gpt(nn.Module):
    def __init__(self, fault, vocab=96, d=48, heads=4, layers=2, ctx=16):
        super().__init__()
        # held out: scale_grad_by_freq=True changes only the embedding's backward
        self.tok = nn.Embedding(vocab, d, scale_grad_by_freq=fault.on("gpt_emb_freq"))
        self.pos = nn.Embedding(ctx, d)
        self.blocks = nn.ModuleList([Block(d, heads, fault, i) for i in range(layers)])
        self.ln = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab)

    def forward(self, idx):
        t = idx.shape[1]
        x = self.tok(idx) + self.pos(torch.arange(t))
        for blk in self.blocks:
            x = blk(x)
        return self.head(self.ln(x))


def gpt_batch(fault):
    g = torch.Generator().manual_seed(7)
    idx = torch.randint(0, 96, (4, 16), generator=g)
    target = torch.randint(0, 96, (4, 16), generator=g)
    if fault.on("batch_token"):
        idx[1, 5] = (idx[1, 5] + 1) % 96
    return idx, target


GPT_PAD_ID = 1  # held3 gpt_ignore_index: RoBERTa's pad id; token 1 occurs once in the targets


def gpt_loss(model, batch, fault):
    idx, target = batch
    logits = model(idx)
    if fault.on("gpt_ignore_index"):
        # held3: the tokenizer's pad id (GPT_PAD_ID) is a real token of this vocabulary
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), target.reshape(-1),
                               ignore_index=GPT_PAD_ID)
    else:
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), target.reshape(-1))
    if fault.on("gpt_loss_x2"):
        loss = loss * 2  # held out: loss scaled by 2
    return loss


def gpt_tamper(model, fault):
    """Weight faults, applied after the seeded initialisation (a checkpoint-loading bug)."""
    with torch.no_grad():
        if fault.on("weight_row"):
            scale_silently(model.blocks[0].mlp.fc1.weight, 1 + 1e-4, rows=3)
        if fault.on("pos_weights"):
            scale_silently(model.pos.weight, 1 + 1e-3)
        if fault.on("gpt_proj_transposed"):
            # held out: block 0's square attention projection loaded transposed (an (in, out)
            # checkpoint layout read as (out, in))
            a = model.blocks[0].attn.proj.weight.numpy(force=True)
            a[...] = a.T.copy()


def gpt_grad_fault(model, fault):
    """Between backward and the optimizer step (visible in step 1 only)."""
    if fault.on("head_grad"):
        scale_silently(model.head.weight.grad, 2.0, rows=0)


# ---- LSTM language model -------------------------------------------------------------------------
class LstmLm(nn.Module):
    def __init__(self, fault, vocab=80, d=32, h=48):
        super().__init__()
        self.fault = fault
        # held out: padding_idx=0 while token 0 is a real token (its row zeroed, no gradient)
        self.emb = nn.Embedding(vocab, d, padding_idx=0 if fault.on("lstm_padding_idx") else None,
                                max_norm=1.0 if fault.on("lstm_emb_max_norm") else None)
        # held3 lstm_emb_max_norm: max_norm=1.0 renormalises the looked-up rows (norms ~5.7)
        # held2 lstm_batch_first: built with the default batch_first=False while the batch is
        # (batch, time): the LSTM runs 3 time steps over a batch of 12
        self.lstm = nn.LSTM(d, h, num_layers=2, batch_first=not fault.on("lstm_batch_first"),
                            dropout=0.2 if fault.on("lstm_dropout") else 0.0)
        self.head = nn.Linear(h, vocab)
        self.state = None  # held2 lstm_carry_state: the last batch's (h, c)

    def forward(self, x):
        f = self.fault
        if f.on("lstm_emb_no_grad"):
            with torch.no_grad():  # held3: a freeze-the-embedding recipe applied by mistake
                e = self.emb(x)
        else:
            e = self.emb(x)
        if f.on("emb_bf16"):
            e = e.to(torch.bfloat16).float()
        if f.on("emb_silent"):
            scale_silently(e, 1 + 1e-3)
        if f.on("lstm_carry_state"):
            # held2: a stateful LSTM whose state is never reset between independent batches
            out, hc = self.lstm(e) if self.state is None else self.lstm(e, self.state)
            self.state = tuple(s.detach() for s in hc)  # detach is not recorded
        else:
            out, _ = self.lstm(e)
        out = GradScale.apply(out, 1 + 1e-3 if f.on("lstm_grad_scale") else 1.0)
        if f.on("lstm_grad_clamp"):
            # held out: a gradient hook clamping the LSTM output's gradient to +-1e-3 (too tight)
            out.register_hook(lambda g: g.clamp(-1e-3, 1e-3))
        if f.on("lstm_relu"):
            out = torch.relu(out)
        return self.head(out)


def lstm_batch(fault):
    g = torch.Generator().manual_seed(11)
    x = torch.randint(0, 80, (3, 12), generator=g)
    y = torch.randint(0, 80, (3, 12), generator=g)
    if fault.on("lstm_batch"):
        x[0, 4] = (x[0, 4] + 7) % 80
    if fault.on("lstm_label_off"):
        y[1, 3] = (y[1, 3] + 1) % 80  # held out: one label off by one
    return x, y


def lstm_loss(model, batch, fault):
    x, y = batch
    logits = model(x).reshape(-1, 80)
    dim = 0 if fault.on("logsoftmax_dim") else 1
    if fault.on("lstm_log_of_softmax"):
        logp = torch.log(F.softmax(logits, dim=1))  # held2: log(softmax) instead of log_softmax
    else:
        logp = F.log_softmax(logits, dim=dim)
    if fault.on("lstm_target_shift"):
        # held2: the loader already yields next-token targets; the loop shifts them once more
        y = torch.roll(y, -1, 1)
    reduction = "sum" if fault.on("loss_sum") else "mean"
    if fault.on("lstm_class_weight"):
        # held3: class weights from the label histogram of another split: all 1 but the first
        # target's class, 1.001 (built in numpy: no captured op)
        w = np.ones(80, np.float32)
        w[int(y[0, 0])] = 1.001
        return F.nll_loss(logp, y.reshape(-1), weight=torch.from_numpy(w), reduction=reduction)
    return F.nll_loss(logp, y.reshape(-1), reduction=reduction)


def lstm_tamper(model, fault):
    with torch.no_grad():
        if fault.on("lstm_weight_row"):
            scale_silently(model.lstm.weight_hh_l1, 1 + 1e-4, rows=5)
        if fault.on("head_bias"):
            model.head.bias.add_(1e-3)
        if fault.on("lstm_forget_bias"):
            # held out: forget-gate bias +1 added to bias_ih_l0 by a checkpoint converter (gates
            # i, f, g, o: rows 48..95)
            model.lstm.bias_ih_l0[48:96].add_(1.0)
        if fault.on("lstm_gate_order"):
            # held3: weights converted from TF1's LSTMCell (gates i, j, f, o) without reordering
            # to PyTorch's (i, f, g, o): the f and g blocks of layer 0 swapped (numpy, uncaptured)
            for w in (model.lstm.weight_ih_l0, model.lstm.weight_hh_l0, model.lstm.bias_ih_l0,
                      model.lstm.bias_hh_l0):
                a = w.numpy(force=True)
                a[48:96], a[96:144] = a[96:144].copy(), a[48:96].copy()


def lstm_grad_fault(model, fault):
    if fault.on("emb_grad_zero"):
        model.emb.weight.grad.zero_()  # a frozen embedding that should train


# ---- torchvision ResNet-18 ----------------------------------------------------------------------
def make_resnet(fault):
    import torchvision
    # held2 resnet_zero_init_residual: every block's last BatchNorm weight starts at 0
    m = torchvision.models.resnet18(num_classes=10,
                                    zero_init_residual=fault.on("resnet_zero_init_residual"))
    if fault.on("bn_eps"):
        m.layer2[0].bn1.eps = 1e-3
    if fault.on("leaky_relu"):
        m.layer3[1].relu = nn.LeakyReLU(0.01, inplace=True)
    if fault.on("extra_dropout_fc"):
        m.fc = nn.Sequential(nn.Dropout(0.2), m.fc)
    if fault.on("avgpool_max"):
        m.avgpool = nn.AdaptiveMaxPool2d((1, 1))
    if fault.on("resnet_bn_eval"):
        m.layer1[1].bn1.eval()  # held out: one BatchNorm on running statistics
    if fault.on("resnet_pad_reflect"):
        m.layer1[0].conv1.padding_mode = "reflect"  # held out: F.pad(reflect) then conv2d
    if fault.on("resnet_shortcut_detach"):
        # held out: layer2.1's shortcut detached (the forward is the same, the backward loses
        # the shortcut's gradient)
        import types
        m.layer2[1].forward = types.MethodType(basic_block_detached, m.layer2[1])
    if fault.on("resnet_dilation"):
        # held3: an output-stride conversion applied to the wrong layer: layer3.1.conv1 dilated
        m.layer3[1].conv1.dilation, m.layer3[1].conv1.padding = (2, 2), (2, 2)
    if fault.on("resnet_maxpool_ceil"):
        m.maxpool.ceil_mode = True  # held2: a Caffe port's ceil_mode pooling: 17x17, not 16x16
    if fault.on("layer4_bf16"):
        # layer4 under bf16 autocast in the target only (hooks keep the module names unchanged).
        state = {}

        def enter(mod, args):
            state["ctx"] = torch.autocast("cpu", dtype=torch.bfloat16)
            state["ctx"].__enter__()

        def leave(mod, args, out):
            state["ctx"].__exit__(None, None, None)
            return out.float()

        m.layer4.register_forward_pre_hook(enter)
        m.layer4.register_forward_hook(leave)
    # Every run wraps layer3 the same way (same structure); the fault changes only the scale.
    layer3 = m.layer3
    s = 1 + 1e-3 if fault.on("layer3_grad_scale") else 1.0

    class Scaled(nn.Module):
        def __init__(self):
            super().__init__()
            self.body = layer3

        def forward(self, x):
            return GradScale.apply(self.body(x), s)

    m.layer3 = Scaled()
    if fault.on("layer1_silent"):
        m.layer1.register_forward_hook(lambda mod, i, o: scale_silently(o, 1 + 1e-3))
    if fault.on("noise_channels_last"):
        m = m.to(memory_format=torch.channels_last)  # noise: NHWC weights, same math
    return m


def basic_block_detached(self, x):
    """torchvision's BasicBlock.forward with the identity detached."""
    identity = x.detach()
    out = self.relu(self.bn1(self.conv1(x)))
    out = self.bn2(self.conv2(out))
    if self.downsample is not None:
        identity = self.downsample(x)
    out += identity
    return self.relu(out)


def resnet_batch(fault):
    g = torch.Generator().manual_seed(5)
    x = torch.randn(2, 3, 64, 64, generator=g)
    y = torch.randint(0, 10, (2,), generator=g)
    if fault.on("pixel_batch"):
        x[1] *= 1 + 1e-3
    return x, y


def resnet_loss(model, batch, fault):
    x, y = batch
    if fault.on("resnet_bgr"):
        x = x.flip(1)  # held3: channels reversed (an OpenCV BGR image fed to an RGB model)
    return F.cross_entropy(model(x), y, label_smoothing=0.1 if fault.on("label_smoothing") else 0.0)


def resnet_tamper(model, fault):
    with torch.no_grad():
        if fault.on("conv_filter"):
            scale_silently(model.layer3.body[0].conv2.weight, 1 + 1e-4, rows=7)


def resnet_grad_fault(model, fault):
    if fault.on("bn_weight_decay"):
        w = model.bn1.weight  # weight decay on a norm weight that should have none
        w.grad.add_(w.detach() * 0.05)
    if fault.on("resnet_clip_norm"):
        # held out: clip_grad_norm_ max_norm 1.0 where the golden's threshold (100) is never
        # reached (the gradient norm is about 51); clipping by 1.0 is exact in torch 1.13
        torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)


class SgdNoZeroGrad(torch.optim.SGD):
    """held2 gpt_no_zero_grad: the loop's zero_grad() reaches an optimizer that does nothing (as
    when it is called on another optimizer): gradients accumulate over the steps."""

    def zero_grad(self, set_to_none=False):
        pass


def make_optimizer(model, fault):
    """SGD lr 0.01 in every run; the held-out optimizer faults change one hyper-parameter."""
    if fault.on("resnet_fc_lr10"):
        # held2: a fine-tuning recipe's head group with 10x the learning rate
        head = list(model.fc.parameters())
        rest = [p for p in model.parameters() if all(p is not h for h in head)]
        return torch.optim.SGD([{"params": rest}, {"params": head, "lr": 0.1}], lr=0.01)
    if fault.on("mbv2_head_not_in_opt"):
        # held2: the optimizer holds the backbone only (built before the 10-class head was put in)
        return torch.optim.SGD([p for n, p in model.named_parameters()
                                if not n.startswith("classifier.")], lr=0.01)
    if fault.on("lstm_maximize"):
        # held3: SGD(maximize=True) (a flag meant for a reward): every update has the wrong sign
        return torch.optim.SGD(model.parameters(), lr=0.01, maximize=True)
    if fault.on("mbv2_param_twice"):
        # held3: a recipe lists the stem's parameters again: they are updated twice a step
        return torch.optim.SGD(list(model.parameters()) + list(model.features[0].parameters()),
                               lr=0.01)
    if isinstance(model, TfEncoder):
        return tf_optimizer(model, fault)
    if isinstance(model, Llama):
        # held4: AdamW lr 1e-3, weight decay 0.01 on matrices only (as Llama recipes)
        decay = [p for p in model.parameters() if p.dim() >= 2]
        rest = [p for p in model.parameters() if p.dim() < 2]
        return torch.optim.AdamW([{"params": decay, "weight_decay": 0.01},
                                  {"params": rest, "weight_decay": 0.0}], lr=1e-3)
    if isinstance(model, Rnx):
        # held4: SGD with momentum 0.9 (as ResNeXt recipes)
        return torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    if fault.on("gpt_no_zero_grad"):
        return SgdNoZeroGrad(model.parameters(), lr=0.01)
    return torch.optim.SGD(model.parameters(), lr=0.01,
                           momentum=0.9 if fault.on("lstm_momentum") else 0.0,
                           weight_decay=0.01 if fault.on("gpt_weight_decay") else 0.0)


# ---- torchvision MobileNetV2 (held2) ------------------------------------------------------------
MB_MEAN = np.array([0.485, 0.456, 0.406], np.float32).reshape(1, 3, 1, 1)
MB_STD = np.array([0.229, 0.224, 0.225], np.float32).reshape(1, 3, 1, 1)


def make_mobilenet(fault):
    import torchvision
    # held2 mbv2_dropout_keep_prob: a TensorFlow keep_prob (0.8) given as PyTorch's drop
    # probability
    m = torchvision.models.mobilenet_v2(
        num_classes=10, dropout=0.8 if fault.on("mbv2_dropout_keep_prob") else 0.2)
    if fault.on("mbv2_bn_momentum"):
        # held2: Keras' momentum convention (0.99 = weight of the old running value) given to
        # PyTorch, where momentum is the weight of the new batch statistic
        m.features[3].conv[0][1].momentum = 0.99
    if fault.on("mbv2_bn_frozen"):
        # held2: a freeze-BN recipe applied to a layer it should not touch: no affine gradients
        for p in m.features[2].conv[1][1].parameters():
            p.requires_grad_(False)
    if fault.on("mbv2_inplace_shortcut"):
        # held3: an in-place ReLU6 added at the start of features.5's branch (a pre-activation
        # recipe): it also clips the tensor the residual add reuses (x + conv(x))
        def relu6_inplace(mod, args):
            F.relu6(args[0], inplace=True)

        m.features[5].conv[0][0].register_forward_pre_hook(relu6_inplace)
    if fault.on("noise_no_mkldnn"):
        torch.backends.mkldnn.enabled = False  # noise: native convolution kernels, no oneDNN
    return m


def mobilenet_batch(fault):
    """Pixels in [0, 1) as a numpy NCHW batch (a loader's output); normalised in mobilenet_loss."""
    g = torch.Generator().manual_seed(9)
    raw = torch.rand(2, 3, 64, 64, generator=g).numpy()
    y = torch.randint(0, 10, (2,), generator=g)
    return raw, y


def mobilenet_loss(model, batch, fault):
    raw, y = batch
    # The loader's normalisation, in numpy (not captured). held2 mbv2_loader_inplace: it works on
    # the cached batch itself, so from the second step on the input is normalised twice.
    a = raw if fault.on("mbv2_loader_inplace") else raw.copy()
    if fault.on("mbv2_pixels_255"):
        a = raw * np.float32(255.0)  # held3: the loader skipped ToTensor's /255
    a -= MB_MEAN
    a /= MB_STD
    return F.cross_entropy(model(torch.from_numpy(a)), y)


def mobilenet_tamper(model, fault):
    with torch.no_grad():
        if fault.on("mbv2_ckpt_fp16"):
            # held2: one projection conv's weight came from a half-precision checkpoint
            w = model.features[6].conv[2].weight
            w.copy_(w.half().float())
        if fault.on("mbv2_dw_weight_elem"):
            # held2: one tap of one depthwise 3x3 filter x(1+1e-3)
            scale_silently(model.features[9].conv[1][0].weight, 1 + 1e-3, rows=(17, 0, 1, 1))


def mobilenet_grad_fault(model, fault):
    pass


# ---- Transformer encoder classifier (held3) ------------------------------------------------------
TF_PAD = 0


class MaskedMeanPool(torch.autograd.Function):
    """Mean over the real tokens (keep: (b, t, 1) of 0/1), with a hand-written backward. The
    held3 fault tf_pool_custom_bwd is the backward that forgets the mask: the padded positions
    get gradient too. Forward ops are recorded inside forward, backward ops inside backward."""

    @staticmethod
    def forward(ctx, h, keep, wrong):
        ctx.save_for_backward(keep)
        ctx.wrong = wrong
        return (h * keep).sum(dim=1) / keep.sum(dim=1)

    @staticmethod
    def backward(ctx, g):
        (keep,) = ctx.saved_tensors
        gh = (g / keep.sum(dim=1)).unsqueeze(1)
        m = torch.ones_like(keep) if ctx.wrong else keep
        return gh * m, None, None


def sinusoid_table(t, d):
    pos = torch.arange(t, dtype=torch.float64).unsqueeze(1)
    inv = torch.exp(torch.arange(0, d, 2, dtype=torch.float64) * (-math.log(10000.0) / d))
    pe = torch.zeros(t, d, dtype=torch.float64)
    pe[:, 0::2] = torch.sin(pos * inv)
    pe[:, 1::2] = torch.cos(pos * inv)
    return pe.float()


class TfEncoder(nn.Module):
    """A small text classifier: token embedding x sqrt(d) + sinusoidal positions, two
    nn.TransformerEncoderLayer (post-LN, ReLU, d=32, 4 heads, feed-forward 64, dropout 0,
    key-padding mask; F.multi_head_attention_forward is one recorded API), a masked mean pool and
    a linear classifier (5 classes). Trained with AdamW (no decay on biases and norms)."""

    def __init__(self, fault, vocab=64, d=32, heads=4, layers=2, ctx=12, classes=5):
        super().__init__()
        self.fault, self.d = fault, d
        self.tok = nn.Embedding(vocab, d)
        pe = sinusoid_table(ctx, d)
        if fault.on("tf_pe_half"):
            pe = pe.half().float()  # held3: the position table stored in half precision
        self.register_buffer("pe", pe)
        # held3 tf_norm_first: layer 1 built pre-LN (norm_first=True), layer 0 post-LN
        self.layers = nn.ModuleList([
            nn.TransformerEncoderLayer(d, heads, 64, dropout=0.0, batch_first=True,
                                       norm_first=fault.on("tf_norm_first") and i == 1)
            for i in range(layers)])
        self.head = nn.Linear(d, classes)

    def forward(self, idx, lengths):
        f = self.fault
        t = idx.shape[1]
        # held3 tf_sqrt_d_rounded: sqrt(32) hard-coded as 5.66 (5.65685...: 5.6e-4 relative)
        scale = 5.66 if f.on("tf_sqrt_d_rounded") else math.sqrt(self.d)
        x = self.tok(idx) * scale + self.pe[:t]
        pos = torch.arange(t).unsqueeze(0)
        if f.on("tf_mask_off_by_one"):
            keep = pos <= lengths.unsqueeze(1)  # held3: one padded position let through
        else:
            keep = pos < lengths.unsqueeze(1)
        if f.on("tf_mask_float"):
            # held3: a Hugging Face style attention mask (float, 1 = keep) passed as PyTorch's
            # key_padding_mask (bool, True = ignore): a float mask is added to the scores
            kpm = keep.float()
        else:
            kpm = keep.logical_not()
        for layer in self.layers:
            x = layer(x, src_key_padding_mask=kpm)
        if f.on("tf_pool_pads"):
            pooled = x.mean(dim=1)  # held3: the mean over every position, pads included
        else:
            pooled = MaskedMeanPool.apply(x, keep.unsqueeze(2).float(),
                                          f.on("tf_pool_custom_bwd"))
        return self.head(pooled)


def tf_batch(fault):
    g = torch.Generator().manual_seed(13)
    lengths = torch.tensor([12, 9, 7, 10])
    idx = torch.randint(1, 64, (4, 12), generator=g)
    idx[torch.arange(12).unsqueeze(0) >= lengths.unsqueeze(1)] = TF_PAD
    y = torch.randint(0, 5, (4,), generator=g)
    return idx, lengths, y


def tf_loss(model, batch, fault):
    idx, lengths, y = batch
    return F.cross_entropy(model(idx, lengths), y)


def tf_tamper(model, fault):
    pass


def tf_grad_fault(model, fault):
    pass


def tf_optimizer(model, fault):
    """AdamW lr 1e-3, weight decay 0.01 on matrices only (biases and LayerNorm weights in a group
    without decay). held3 tf_adamw_all_decay: one group, everything decayed."""
    if fault.on("tf_adamw_all_decay"):
        return torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01)
    decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
    rest = [p for n, p in model.named_parameters() if p.dim() < 2]
    return torch.optim.AdamW([{"params": decay, "weight_decay": 0.01},
                              {"params": rest, "weight_decay": 0.0}], lr=1e-3)



# ---- Llama-style decoder (held4) -----------------------------------------------------------------
LLAMA_VOCAB, LLAMA_CTX = 64, 16


def rope_tables(t, hd, base):
    """Rotary cos/sin tables (t, hd) for the rotate-half layout, built in float64 at init (no
    captured op)."""
    inv = 1.0 / (base ** (torch.arange(0, hd, 2, dtype=torch.float64) / hd))
    ang = torch.outer(torch.arange(t, dtype=torch.float64), inv)
    ang = torch.cat([ang, ang], dim=-1)
    return ang.cos().float(), ang.sin().float()


class RMSNorm(nn.Module):
    """Hand-written RMSNorm: x * rsqrt(mean(x^2) + eps) * w (pow, mean, add, rsqrt, mul, mul)."""

    def __init__(self, d, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(d))
        self.eps = eps

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def rotate_half(x):
    h = x.shape[-1] // 2
    return torch.cat((-x[..., h:], x[..., :h]), dim=-1)


class LlamaAttention(nn.Module):
    def __init__(self, d, heads, fault, index):
        super().__init__()
        self.wq = nn.Linear(d, d, bias=False)
        self.wk = nn.Linear(d, d, bias=False)
        self.wv = nn.Linear(d, d, bias=False)
        self.wo = nn.Linear(d, d, bias=False)
        self.heads, self.fault, self.index = heads, fault, index

    def forward(self, x, cos, sin):
        f, i = self.fault, self.index
        b, t, d = x.shape
        hd = d // self.heads
        q, k, v = (w(x).view(b, t, self.heads, hd).transpose(1, 2)
                   for w in (self.wq, self.wk, self.wv))
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        scale = 1.0 / math.sqrt(hd)
        if f.on("llama_bf16_scale_d") and i == 1:
            scale = 1.0 / hd  # held4: 1/d instead of 1/sqrt(d)
        if (f.on("llama_oldcpu_attn_scale") and i == 0) or (f.on("llama_step_scale_oldcpu")
                                                            and i == 1):
            scale *= 1 + 1e-3  # held4: a softmax temperature off by 1e-3
        att = torch.matmul(q, k.transpose(-2, -1)) * scale
        mask = torch.triu(torch.ones(t, t, dtype=torch.bool), diagonal=1)
        att = att.masked_fill(mask, float("-inf"))
        p = F.softmax(att.float(), dim=-1)
        y = torch.matmul(p, v).transpose(1, 2).reshape(b, t, d)
        return self.wo(y)


class SwiGlu(nn.Module):
    def __init__(self, d, hidden, fault, index):
        super().__init__()
        self.gate = nn.Linear(d, hidden, bias=False)
        self.up = nn.Linear(d, hidden, bias=False)
        self.down = nn.Linear(hidden, d, bias=False)
        self.fault, self.index = fault, index

    def forward(self, x):
        g = self.gate(x)
        if self.fault.on("llama_step_hardswish") and self.index == 1:
            a = F.hardswish(g)  # held4: a mobile kernel's hard-swish in place of SiLU
        else:
            a = F.silu(g)
        return self.down(a * self.up(x))


class LlamaBlock(nn.Module):
    def __init__(self, d, heads, hidden, fault, index):
        super().__init__()
        eps_attn = 1e-6
        if fault.on("llama_bf16_rms_eps") and index == 1:
            eps_attn = LLAMA_BF16_EPS  # held4
        eps_mlp = 1e-6
        if fault.on("llama_step_rms_eps") and index == 0:
            eps_mlp = LLAMA_STEP_EPS  # held4
        self.attn_norm = RMSNorm(d, eps_attn)
        self.attn = LlamaAttention(d, heads, fault, index)
        self.mlp_norm = RMSNorm(d, eps_mlp)
        self.mlp = SwiGlu(d, hidden, fault, index)

    def forward(self, x, cos, sin):
        x = x + self.attn(self.attn_norm(x), cos, sin)
        return x + self.mlp(self.mlp_norm(x))


LLAMA_BF16_EPS = 1e-1   # held4 llama_bf16_rms_eps (mean square ~1.2: ~4 %, up to 10 % a row)
LLAMA_STEP_EPS = 1e-2   # held4 llama_step_rms_eps (~0.4 %)
LLAMA_OLDCPU_EPS = 1e-3  # held4 llama_oldcpu_eps (~4e-4)


class Llama(nn.Module):
    """A small Llama-style decoder: token embedding, 2 blocks of pre-RMSNorm causal attention with
    rotary embeddings (rotate-half, tables built at init) and a SwiGLU MLP, a final RMSNorm and an
    untied LM head; no biases. d=32, 4 heads, hidden 88, vocabulary 64, batch 4x16 tokens."""

    def __init__(self, fault, vocab=LLAMA_VOCAB, d=32, heads=4, layers=2, hidden=88,
                 ctx=LLAMA_CTX):
        super().__init__()
        self.fault = fault
        self.tok = nn.Embedding(vocab, d)
        self.layers = nn.ModuleList([LlamaBlock(d, heads, hidden, fault, i)
                                     for i in range(layers)])
        self.norm = RMSNorm(d, LLAMA_OLDCPU_EPS if fault.on("llama_oldcpu_eps") else 1e-6)
        self.lm_head = nn.Linear(d, vocab, bias=False)
        # held4 llama_bf16_rope_base: a rotary base of 1000 (a config read from another model)
        cos, sin = rope_tables(ctx + 1, d // heads,
                               1000.0 if fault.on("llama_bf16_rope_base") else 10000.0)
        self.register_buffer("cos", cos, persistent=False)
        self.register_buffer("sin", sin, persistent=False)

    def forward(self, idx):
        t = idx.shape[1]
        # held4 llama_step_rope_offset: positions counted from 1 (an off-by-one position id)
        s = 1 if self.fault.on("llama_step_rope_offset") else 0
        cos, sin = self.cos[s:s + t], self.sin[s:s + t]
        x = self.tok(idx)
        for blk in self.layers:
            x = blk(x, cos, sin)
        return self.lm_head(self.norm(x))


def llama_batch(fault):
    g = torch.Generator().manual_seed(17)
    idx = torch.randint(0, LLAMA_VOCAB, (4, LLAMA_CTX), generator=g)
    target = torch.randint(0, LLAMA_VOCAB, (4, LLAMA_CTX), generator=g)
    return idx, target


def llama_loss(model, batch, fault):
    idx, target = batch
    logits = model(idx)
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]).float(), target.reshape(-1))


def llama_tamper(model, fault):
    with torch.no_grad():
        if fault.on("llama_bf16_norm_weight"):
            scale_silently(model.norm.weight, 1.05)  # held4: final norm weight loaded x1.05
        if fault.on("llama_oldcpu_rms_weight_elem"):
            # held4: one element of block 0's mlp_norm weight x(1+1e-3)
            scale_silently(model.layers[0].mlp_norm.weight, 1 + 1e-3, rows=5)
        if fault.on("llama_oldcpu_gate_row"):
            # held4: one row of block 1's SwiGLU gate weight x(1+1e-3)
            scale_silently(model.layers[1].mlp.gate.weight, 1 + 1e-3, rows=7)


def llama_grad_fault(model, fault):
    pass


# ---- ResNeXt-style CNN with grouped convolutions (held4) ----------------------------------------
class RnxBlock(nn.Module):
    """ResNeXt bottleneck: 1x1 conv, 3x3 grouped conv (stride here), 1x1 conv, each with
    BatchNorm, ReLU after the first two and after the residual add; a 1x1 projection shortcut
    when the shape changes."""

    def __init__(self, cin, cout, width, groups, stride, fault, index):
        super().__init__()
        f, i = fault, index
        # held4 rnx_bf16_stride_1x1: the stride on the first 1x1 conv (ResNet v1) instead of the
        # grouped 3x3 (v1.5): same output shape
        s1, s2 = (stride, 1) if f.on("rnx_bf16_stride_1x1") and i == 1 else (1, stride)
        self.conv1 = nn.Conv2d(cin, width, 1, stride=s1, bias=False)
        self.bn1 = nn.BatchNorm2d(width, eps=RNX_STEP_EPS if f.on("rnx_step_bn_eps") and i == 1
                                  else 1e-5)
        self.conv2 = nn.Conv2d(width, width, 3, stride=s2, padding=1, groups=groups, bias=False)
        self.bn2 = nn.BatchNorm2d(width, eps=RNX_BF16_EPS if f.on("rnx_bf16_bn_eps") and i == 2
                                  else 1e-5)
        self.conv3 = nn.Conv2d(width, cout, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(cout)
        self.short = None
        if stride != 1 or cin != cout:
            self.short = nn.Sequential(nn.Conv2d(cin, cout, 1, stride=stride, bias=False),
                                       nn.BatchNorm2d(cout))
        self.fault, self.index = fault, index

    def forward(self, x):
        f, i = self.fault, self.index
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        if f.on("rnx_bf16_leaky") and i == 0:
            out = F.leaky_relu(out, 0.1)  # held4: LeakyReLU(0.1) in place of the middle ReLU
        else:
            out = F.relu(out)
        out = self.bn3(self.conv3(out))
        sc = x if self.short is None else self.short(x)
        out = out + sc
        if f.on("rnx_step_leaky") and i == 2:
            return F.leaky_relu(out, 0.01)  # held4: LeakyReLU(0.01) after the last residual add
        return F.relu(out)


RNX_BF16_EPS = 2e-2  # held4 rnx_bf16_bn_eps (batch variance ~0.11: ~8 %)
RNX_STEP_EPS = 1e-2  # held4 rnx_step_bn_eps (batch variance ~0.22: ~2 %)


class Rnx(nn.Module):
    """A small ResNeXt-style classifier for 2x3x32x32 images: a 3x3 stem (16 channels, BN, ReLU),
    three bottleneck blocks with grouped 3x3 convolutions (16->32 width 32 groups 4; 32->64 width
    64 groups 8 stride 2; 64->64 width 64 groups 8), global average pooling, a 10-class linear."""

    def __init__(self, fault):
        super().__init__()
        self.stem = nn.Conv2d(3, 16, 3, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(16)
        self.blocks = nn.ModuleList([RnxBlock(16, 32, 32, 4, 1, fault, 0),
                                     RnxBlock(32, 64, 64, 8, 2, fault, 1),
                                     RnxBlock(64, 64, 64, 8, 1, fault, 2)])
        self.fc = nn.Linear(64, 10)

    def forward(self, x):
        x = F.relu(self.bn(self.stem(x)))
        for blk in self.blocks:
            x = blk(x)
        return self.fc(F.adaptive_avg_pool2d(x, 1).flatten(1))


def rnx_batch(fault):
    g = torch.Generator().manual_seed(19)
    x = torch.randn(2, 3, 32, 32, generator=g)
    y = torch.randint(0, 10, (2,), generator=g)
    if fault.on("rnx_oldcpu_pixel"):
        x[1] *= 1 + 1e-3  # held4: one image of the batch x(1+1e-3)
    return x, y


def rnx_loss(model, batch, fault):
    x, y = batch
    return F.cross_entropy(model(x).float(), y)


def rnx_tamper(model, fault):
    with torch.no_grad():
        if fault.on("rnx_bf16_group_slice"):
            # held4: group 3 of block 1's grouped conv (output channels 24..31) loaded x1.05
            scale_silently(model.blocks[1].conv2.weight, 1.05, rows=slice(24, 32))
        if fault.on("rnx_step_group_slice_threads"):
            # held4: group 5 of block 2's grouped conv (output channels 40..47) loaded x1.01
            scale_silently(model.blocks[2].conv2.weight, 1.01, rows=slice(40, 48))
        if fault.on("rnx_oldcpu_filter"):
            # held4: one filter of block 2's grouped conv x(1+1e-3)
            scale_silently(model.blocks[2].conv2.weight, 1 + 1e-3, rows=13)
        if fault.on("rnx_oldcpu_bn_weight"):
            # held4: one element of the stem BatchNorm's weight x(1+1e-3)
            scale_silently(model.bn.weight, 1 + 1e-3, rows=4)
        if fault.on("rnx_oldcpu_fc_row"):
            # held4: one row of the classifier's weight x(1+1e-3)
            scale_silently(model.fc.weight, 1 + 1e-3, rows=3)


def rnx_grad_fault(model, fault):
    pass


MODELS = {
    "gpt": (lambda f: Gpt(f), gpt_batch, gpt_loss, gpt_tamper, gpt_grad_fault),
    "lstm": (lambda f: LstmLm(f), lstm_batch, lstm_loss, lstm_tamper, lstm_grad_fault),
    "resnet": (make_resnet, resnet_batch, resnet_loss, resnet_tamper, resnet_grad_fault),
    "mobilenet": (make_mobilenet, mobilenet_batch, mobilenet_loss, mobilenet_tamper,
                  mobilenet_grad_fault),
    "tfenc": (lambda f: TfEncoder(f), tf_batch, tf_loss, tf_tamper, tf_grad_fault),
    "llama": (lambda f: Llama(f), llama_batch, llama_loss, llama_tamper, llama_grad_fault),
    "rnx": (lambda f: Rnx(f), rnx_batch, rnx_loss, rnx_tamper, rnx_grad_fault),
}
