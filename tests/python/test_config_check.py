"""config_check (docs/config_check.md): packs of two real training runs that differ in a
hyper-parameter, an environment variable and the seed; the compare through the CLI names all three;
a run against itself passes every check; a bad pack is an error naming the file; packs made by
msprobe are read, and msprobe reads ours (live, in the torch 2.x lane)."""
import os
import pathlib
import subprocess
import sys
import zipfile

import pytest

from conftest import PYDIR, live, read_csv

HERE = pathlib.Path(__file__).resolve().parent
SCRIPT = HERE / "config_check_train_script.py"
MSPROBE_SCRIPT = HERE / "config_check_msprobe_script.py"
RUN_SH = """#!/bin/bash
GPT_ARGS="--micro-batch-size 2 \\
  --seq-length {seq}"
torchrun --nproc_per_node 1 pretrain.py $GPT_ARGS --lr {lr} --tensor-model-parallel-size 1
"""


def train(tmp, name, lr, seed, extra_env):
    script = tmp / f"{name}.sh"
    script.write_text(RUN_SH.format(seq=128, lr=lr))
    pack = tmp / f"{name}.zip"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NCCL_", "CUDA_LAUNCH", "RANK"))}
    env.update(extra_env)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(PYDIR), env.get("PYTHONPATH")]))
    subprocess.run([sys.executable, str(SCRIPT), "--lr", str(lr), "--seed", str(seed), "--pack",
                    str(pack), "--script", str(script)], check=True, env=env, timeout=300)
    return pack


@pytest.fixture(scope="module")
def packs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("config_check")
    golden = train(tmp, "golden", 0.1, 1, {"NCCL_ALGO": "Ring"})
    target = train(tmp, "target", 0.05, 2, {"NCCL_ALGO": "Tree"})
    return golden, target


def test_pack_layout(packs):
    names = set(zipfile.ZipFile(packs[0]).namelist())
    assert {"env", "pip", "hyperparameters/hyperparameters_static.json",
            "hyperparameters/hyperparameters_dynamic.json", "random/rank0.json"} <= names
    for step in range(3):
        assert f"weights/step{step}/rank0/weight.json" in names
        assert f"dataset/step{step}/rank0/dataset.json" in names


def test_compare_reports_hyperparameter_env_and_seed(cli, packs, tmp_path):
    out = tmp_path / "out"
    p = cli("config-check", "-c", *packs, "-o", out, check=False)
    assert p.returncode == 1, p.stderr
    summary = {r["filename"]: r["pass_check"] for r in read_csv(out / "summary.csv")}
    assert summary == {"env": "error", "pip": "pass", "hyperparameters": "error",
                       "weights": "error", "dataset": "error", "random": "error"}
    # failing checks are printed first
    lines = p.stdout.splitlines()
    assert lines[0].startswith("ERROR") and "PASS     pip" in p.stdout

    env_rows = read_csv(out / "env.csv")
    assert [(r["bench_env_name"], r["bench_value"], r["cmp_value"]) for r in env_rows] == [
        ("NCCL_ALGO", "Ring", "Tree")]
    hyper = {(r["file_name"], r["bench_para"]): r for r in read_csv(out / "hyperparameters.csv")}
    assert hyper[("hyperparameters_dynamic.json", "lr")]["cmp_value"] == "0.05"
    assert hyper[("hyperparameters_dynamic.json", "seed")]["level"] == "error"
    assert hyper[("hyperparameters_static.json", "lr")]["bench_value"] == "0.1"
    random_rows = [r for r in read_csv(out / "random.csv") if r["op"] == "torch.manual_seed"]
    assert random_rows and random_rows[0]["check_result"] == "False"
    assert "seeds 1" in random_rows[0]["bench_count"] and "seeds 2" in random_rows[0]["cmp_count"]
    # the same draws were made from the same lines: every other random call pairs and agrees
    others = [r for r in read_csv(out / "random.csv") if "seed" not in r["op"]]
    assert others and all(r["check_result"] == "True" for r in others)

    openpyxl = pytest.importorskip("openpyxl")
    wb = openpyxl.load_workbook(out / "result.xlsx", read_only=True)
    assert wb.sheetnames == ["summary", "env", "pip", "hyperparameters", "weights", "dataset",
                             "random"]
    rows = list(wb["summary"].iter_rows(values_only=True))
    assert rows[0][:2] == ("filename", "pass_check") and ("env", "error", 1, None) in rows


def test_run_against_itself_passes(cli, packs, tmp_path):
    p = cli("config-check", "-c", packs[0], packs[0], "-o", tmp_path / "same")
    summary = read_csv(tmp_path / "same" / "summary.csv")
    assert {r["pass_check"] for r in summary} == {"pass"}, p.stdout
    assert len(summary) == 6


def test_static_pack_from_scripts(cli, tmp_path):
    run = tmp_path / "run.sh"
    run.write_text(RUN_SH.format(seq=256, lr=0.001))
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text("train:\n  learning_rate: 0.001\n  global_batch_size: 64\n")
    cli("config-check", "-d", run, cfg, "-o", tmp_path / "static.zip")
    run.write_text(RUN_SH.format(seq=512, lr=0.001))
    cli("config-check", "-d", run, cfg, "-o", tmp_path / "static2.zip")
    p = cli("config-check", "-c", tmp_path / "static.zip", tmp_path / "static2.zip", "-o",
            tmp_path / "out", check=False)
    assert p.returncode == 1
    rows = read_csv(tmp_path / "out" / "hyperparameters.csv")
    assert [(r["bench_para"], r["bench_value"], r["cmp_value"]) for r in rows] == [
        ("seq-length", "256", "512")]


@pytest.mark.parametrize("content", [b"", b"PK\x03\x04garbage", None])
def test_bad_pack_is_an_error_naming_the_file(cli, packs, tmp_path, content):
    bad = tmp_path / "bad.zip"
    if content is None:  # a real pack cut in half
        data = packs[0].read_bytes()
        bad.write_bytes(data[: len(data) // 2])
    else:
        bad.write_bytes(content)
    p = cli("config-check", "-c", packs[0], bad, "-o", tmp_path / "out", check=False)
    assert p.returncode == 2
    assert str(bad) in p.stderr and "error" in p.stderr
    assert not (tmp_path / "out" / "result.xlsx").exists()


def test_bad_member_names_the_member(cli, packs, tmp_path):
    bad = tmp_path / "badmember.zip"
    with zipfile.ZipFile(bad, "w") as z:
        z.writestr("env", "{not json")
        z.writestr("pip", "torch=1\n")
    p = cli("config-check", "-c", packs[0], bad, "-o", tmp_path / "out", check=False)
    assert p.returncode == 2 and "member env" in p.stderr and str(bad) in p.stderr


def test_msprobe_packs_are_read_and_msprobe_reads_ours(cli, packs, tmp_path):
    """Live msprobe (the torch 2.x lane): numprobe compares two packs msprobe made, and msprobe's
    compare reads two packs numprobe made, reaching the same verdicts on the checks both have."""
    live("msprobe")
    made = []
    for name, lr, seed, algo in (("ms_golden", 0.1, 1, "Ring"), ("ms_target", 0.05, 2, "Tree")):
        script = tmp_path / f"{name}.sh"
        script.write_text(RUN_SH.format(seq=128, lr=lr))
        env = {k: v for k, v in os.environ.items() if not k.startswith("NCCL_")}
        env["NCCL_ALGO"] = algo
        subprocess.run([sys.executable, str(MSPROBE_SCRIPT), str(lr), str(seed),
                        str(tmp_path / f"{name}.zip"), str(script)], check=True, env=env,
                       timeout=300, cwd=tmp_path, capture_output=True)
        made.append(tmp_path / f"{name}.zip")
    p = cli("config-check", "-c", *made, "-o", tmp_path / "ours", check=False)
    assert p.returncode == 1, p.stderr
    summary = {r["filename"]: r["pass_check"] for r in read_csv(tmp_path / "ours" / "summary.csv")}
    # msprobe records no seed values: the seed shows in the weights, not in random
    assert summary == {"env": "error", "pip": "pass", "hyperparameters": "error",
                       "weights": "error", "dataset": "error", "random": "pass"}
    hyper = read_csv(tmp_path / "ours" / "hyperparameters.csv")
    assert [(r["bench_para"], r["bench_value"], r["cmp_value"]) for r in hyper] == [("lr", "0.1", "0.05")]

    msprobe = os.path.join(os.path.dirname(sys.executable), "msprobe")
    out = tmp_path / "theirs"
    p = subprocess.run([msprobe, "config_check", "-c", str(packs[0]), str(packs[1]), "-o", str(out)],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    openpyxl = live("openpyxl")
    rows = openpyxl.load_workbook(out / "result.xlsx", read_only=True)["summary"].iter_rows(values_only=True)
    theirs = dict(list(rows)[1:])
    assert {k: theirs[k] for k in ("env", "pip", "hyperparameters", "weights", "dataset")} == {
        "env": "error", "pip": "pass", "hyperparameters": "error", "weights": "error", "dataset": "error"}


def test_ranks_write_their_own_packs_read_together(cli, tmp_path):
    """A rank > 0 writes pack_rank{R}.zip beside pack.zip; the compare reads them as one pack."""
    golden = train(tmp_path, "job", 0.1, 1, {"RANK": "0"})
    train(tmp_path, "job", 0.1, 1, {"RANK": "1"})
    rank1 = zipfile.ZipFile(tmp_path / "job_rank1.zip").namelist()
    assert "env" not in rank1 and "weights/step0/rank1/weight.json" in rank1
    cli("config-check", "-c", golden, golden, "-o", tmp_path / "same")
    single = tmp_path / "single"
    single.mkdir()
    (single / "job.zip").write_bytes(golden.read_bytes())
    p = cli("config-check", "-c", golden, single / "job.zip", "-o", tmp_path / "out", check=False)
    assert p.returncode == 1
    rows = read_csv(tmp_path / "out" / "weights.csv")
    assert {r["equal"] for r in rows if r["rank"] == "1"} == {"only bench have"}
    assert {r["equal"] for r in rows if r["rank"] == "0"} == {"True"}


def test_bad_script_or_yaml_is_an_error_naming_the_file(cli, tmp_path):
    bad_yaml = tmp_path / "bad.yaml"
    bad_yaml.write_text("train: [unclosed\n")
    bad_sh = tmp_path / "bad.sh"
    bad_sh.write_text("python train.py --name 'unclosed\n")
    for path in (bad_yaml, bad_sh, tmp_path / "missing.sh"):
        p = cli("config-check", "-d", path, "-o", tmp_path / "pack.zip", check=False)
        assert p.returncode == 2 and str(path) in p.stderr, p.stderr
        assert not (tmp_path / "pack.zip").exists()


MEGATRON_SH = r"""#!/bin/bash
export CUDA_DEVICE_MAX_CONNECTIONS=1
GPUS_PER_NODE=8
TP=4   # tensor parallel
PP=2
DATA_PATH=/data/my_text_document

# model
GPT_ARGS="
    --tensor-model-parallel-size ${TP} \
    --pipeline-model-parallel-size ${PP} \
    --num-layers 24 \
    --seq-length 4096 \
    --micro-batch-size 1 \
    --global-batch-size 256 \
    --lr 1.25e-6 \
    --lr-decay-style cosine \
    --bf16
"
DATA_ARGS="--data-path $DATA_PATH --split 949,50,1"

torchrun --nproc_per_node $GPUS_PER_NODE pretrain_gpt.py \
    $GPT_ARGS \
    $DATA_ARGS \
    --seed 1234 \
    --save-interval=1000 \
    | tee logs/train.log
"""


def test_megatron_launch_script_is_parsed(cli, tmp_path):
    script = tmp_path / "pretrain_gpt.sh"
    script.write_text(MEGATRON_SH)
    cli("config-check", "-d", script, "-o", tmp_path / "pack.zip")
    import json
    params = json.loads(zipfile.ZipFile(tmp_path / "pack.zip").read(
        "hyperparameters/hyperparameters_static.json"))
    assert params == {
        "nproc_per_node": "8", "tensor-model-parallel-size": "4", "pipeline-model-parallel-size": "2",
        "num-layers": "24", "seq-length": "4096", "micro-batch-size": "1", "global-batch-size": "256",
        "lr": "1.25e-6", "lr-decay-style": "cosine", "bf16": True, "data-path": "/data/my_text_document",
        "split": "949,50,1", "seed": "1234", "save-interval": "1000"}
    # the same run described in yaml with other spellings: matched through the alias table
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text("parallel:\n  tp: 4\n  pp: 2\ntrain:\n  learning_rate: 2.5e-6\n  seq_len: 4096\n")
    cli("config-check", "-d", cfg, "-o", tmp_path / "yaml.zip")
    p = cli("config-check", "-c", tmp_path / "pack.zip", tmp_path / "yaml.zip", "-o", tmp_path / "out",
            check=False)
    rows = {r["bench_para"]: r for r in read_csv(tmp_path / "out" / "hyperparameters.csv")}
    assert rows["lr"]["cmp_para"] == "train.learning_rate" and rows["lr"]["matched_with"] == "mapping"
    assert rows["lr"]["level"] == "error" and p.returncode == 1
    assert "tensor-model-parallel-size" not in rows and "seq-length" not in rows  # equal via aliases


def test_compare_wants_two_packs(cli, packs, tmp_path):
    p = cli("config-check", "-c", packs[0], "-o", tmp_path / "out", check=False)
    assert p.returncode == 2 and "two packs" in p.stderr, p.stderr
