"""`numprobe ckpt-compare` on real checkpoints written by torch.save and safetensors (issue 21):
a torchvision ResNet-18 with random weights saved both ways compares equal, a perturbed layer comes
first, numprobe's l2/cos agree with numpy's, Megatron trees with an argparse Namespace are read
without running anything, and bad input fails with a clear error and no output file."""
import argparse
import json
import random

import numpy as np
import pytest

from conftest import live

torch = pytest.importorskip("torch")


def ckpt_compare(cli, a, b, out, check=True, csv=False):
    args = ["ckpt-compare", a, b, "-o", out] + (["--csv"] if csv else [])
    p = cli(*args, check=check)
    result = json.loads(out.read_text()) if out.exists() else None
    return p, result


def resnet18_state_dict():
    torchvision = live("torchvision")
    torch.manual_seed(0)
    model = torchvision.models.resnet18(num_classes=10)  # random weights, nothing downloaded
    return {k: v.detach().clone().contiguous() for k, v in model.state_dict().items()}


def test_resnet18_pt_and_safetensors_equal(cli, tmp_path):
    sd = resnet18_state_dict()
    save_file = live("safetensors.torch").save_file
    torch.save(sd, tmp_path / "a.pt")
    save_file(sd, str(tmp_path / "b.safetensors"))
    p, result = ckpt_compare(cli, tmp_path / "a.pt", tmp_path / "b.safetensors", tmp_path / "o.json",
                             csv=True)
    assert len(result) == len(sd)
    assert {v["status"] for v in result.values()} == {"pass"}, p.stdout
    assert all(v["l2"] == 0.0 for v in result.values())
    assert result["fc.weight"]["shape"] == [10, 512] and result["fc.weight"]["numel"] == 5120
    assert "compared %d: %d pass" % (len(sd), len(sd)) in p.stdout
    assert (tmp_path / "o.csv").read_text().count("\n") == len(sd) + 1


@pytest.mark.parametrize("fmt", ["pt", "safetensors"])
def test_perturbed_layer_comes_first(cli, tmp_path, fmt):
    sd = resnet18_state_dict()
    other = {k: v.clone() for k, v in sd.items()}
    layer = "layer3.0.conv2.weight"
    other[layer] += 0.01 * torch.randn_like(other[layer])
    if fmt == "pt":
        torch.save(sd, tmp_path / "a.pt")
        torch.save(other, tmp_path / "b.pt")
    else:
        save_file = live("safetensors.torch").save_file
        save_file(sd, str(tmp_path / "a.pt"))  # safetensors content under another name is found
        save_file(other, str(tmp_path / "b.pt"))
    p, result = ckpt_compare(cli, tmp_path / "a.pt", tmp_path / "b.pt", tmp_path / "o.json")
    names = list(result)
    assert names[0] == layer, p.stdout
    assert result[layer]["status"] != "pass"
    assert result[layer]["cos"] < 0.9999
    assert all(result[n]["status"] == "pass" for n in names[1:])
    assert layer in p.stdout.split("worst:")[1]


def test_l2_and_cos_match_numpy(cli, tmp_path):
    gen = torch.Generator().manual_seed(1)
    a = {"w": torch.randn(64, 33, generator=gen), "b": torch.randn(7, generator=gen),
         "h": torch.randn(16, 16, generator=gen).half(), "t": torch.randn(9, 4, generator=gen).t()}
    b = {k: v + 0.05 * torch.randn(v.shape, generator=gen).to(v.dtype) for k, v in a.items()}
    torch.save(a, tmp_path / "a.pt")
    torch.save(b, tmp_path / "b.pt")
    _, result = ckpt_compare(cli, tmp_path / "a.pt", tmp_path / "b.pt", tmp_path / "o.json")
    for k in a:
        x = a[k].double().numpy().ravel()
        y = b[k].double().numpy().ravel()
        l2 = np.linalg.norm(x - y)
        cos = x.dot(y) / (np.linalg.norm(x) * np.linalg.norm(y))
        assert result[k]["l2"] == pytest.approx(l2, rel=1e-12), k
        assert result[k]["cos"] == pytest.approx(cos, rel=1e-12), k
        assert result[k]["max_abs_err"] == pytest.approx(np.abs(x - y).max(), rel=1e-12), k
        assert result[k]["shape"] == list(a[k].shape)


def megatron_tree(root, weights, namespace):
    rank = root / "iter_0000005" / "mp_rank_00"
    rank.mkdir(parents=True)
    (root / "latest_checkpointed_iteration.txt").write_text("5\n")
    torch.save({"args": namespace, "iteration": 5, "checkpoint_version": 3.0, "model": weights,
                "optimizer": {"state": {0: {"exp_avg": torch.zeros(3)}},
                              "param_groups": [{"lr": 1e-4, "params": [0]}]},
                "rng_state": [{"random_rng_state": random.getstate(),
                               "np_rng_state": np.random.get_state(),
                               "torch_rng_state": torch.get_rng_state()}]},
               rank / "model_optim_rng.pt")


def test_megatron_tree_with_namespace(cli, tmp_path):
    ns = argparse.Namespace(lr=1e-4, seed=1234, params_dtype=torch.bfloat16)
    w = {"embedding.word_embeddings.weight": torch.randn(8, 4),
         "decoder.layers.0.mlp.linear_fc1.weight": torch.randn(16, 4)}
    megatron_tree(tmp_path / "a", w, ns)
    w2 = dict(w)
    w2["decoder.layers.0.mlp.linear_fc1.weight"] = w["decoder.layers.0.mlp.linear_fc1.weight"] * 1.5
    megatron_tree(tmp_path / "b", w2, ns)
    p, result = ckpt_compare(cli, tmp_path / "a", tmp_path / "b", tmp_path / "o.json")
    assert list(result) == ["decoder.layers.0.mlp.linear_fc1.weight.0",
                            "embedding.word_embeddings.weight.0"]
    assert "Megatron" in p.stdout and "other objects skipped" in p.stdout


class Payload:
    """An object of the test's own module: torch.load would import and build it."""


def test_refuses_foreign_objects_and_writes_nothing(cli, tmp_path):
    torch.save({"w": torch.ones(2), "evil": Payload()}, tmp_path / "a.pt")
    torch.save({"w": torch.ones(2)}, tmp_path / "b.pt")
    out = tmp_path / "o.json"
    p, result = ckpt_compare(cli, tmp_path / "a.pt", tmp_path / "b.pt", out, check=False)
    assert p.returncode != 0 and result is None
    assert "a.pt" in p.stderr and "Payload" in p.stderr and "runs no pickled code" in p.stderr


def test_truncated_and_nothing_compared(cli, tmp_path):
    torch.save({"w": torch.ones(1000)}, tmp_path / "a.pt")
    data = (tmp_path / "a.pt").read_bytes()
    (tmp_path / "t.pt").write_bytes(data[: len(data) // 2])
    p, result = ckpt_compare(cli, tmp_path / "t.pt", tmp_path / "a.pt", tmp_path / "o.json", check=False)
    assert p.returncode != 0 and result is None and "t.pt" in p.stderr
    torch.save({"v": torch.ones(3)}, tmp_path / "b.pt")
    p, result = ckpt_compare(cli, tmp_path / "a.pt", tmp_path / "b.pt", tmp_path / "o.json", check=False)
    assert p.returncode != 0  # nothing in common
    assert result["w"]["only_in"] == "a" and result["v"]["only_in"] == "b"


def test_npy_directories(cli, tmp_path):
    for side, scale in (("a", 1.0), ("b", 1.0)):
        (tmp_path / side / "layer").mkdir(parents=True)
        np.save(tmp_path / side / "layer" / "weight.npy", np.arange(12, dtype=np.float32).reshape(3, 4) * scale)
        np.save(tmp_path / side / "bias.npy", np.ones(3, dtype=np.float64))
    np.save(tmp_path / "b" / "extra.npy", np.zeros(2, dtype=np.float32))
    _, result = ckpt_compare(cli, tmp_path / "a", tmp_path / "b", tmp_path / "o.json")
    assert result["layer/weight"]["status"] == "pass" and result["bias"]["cos"] == pytest.approx(1.0)
    assert list(result)[0] == "extra" and result["extra"]["only_in"] == "b"
