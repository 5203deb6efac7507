"""numprobe locate (docs/locate.md): a real small GPT script pair with an injected fault, driven
round by round through NUMPROBE_CONFIG, single process and 2 ranks over gloo; a failing command;
NUMPROBE_CONFIG honoured (Python and C++) and absent."""
import json
import os
import pathlib
import subprocess
import sys

import pytest

from conftest import BUILD, CLI, PYDIR, ROOT, rank_dir

DEMO = ROOT / "examples" / "python" / "locate_demo.py"
PY = sys.executable


def demo(fault="", extra=""):
    return f"{PY} {DEMO} --fault '{fault}' {extra}".strip()


def locate(out, golden, target, *flags, env=None):
    e = dict(os.environ, PYTHONPATH=str(PYDIR), **(env or {}))
    return subprocess.run([str(CLI), "locate", "--golden", golden, "--target", target, "-o",
                           str(out), *flags], capture_output=True, text=True, env=e, timeout=300)


# locate's rounds are Python driving the CLI, the same under any torch: the torch 2.x lane
# (NUMPROBE_REQUIRE_LIVE) runs the end-to-end cases (single process, 2 ranks over gloo, a
# failing run, NUMPROBE_CONFIG) and leaves the diagnosis-suite regressions, a minute and a half of
# real training scripts, to the oldest-torch lane that every `make test` also runs.
oldest_lane_only = pytest.mark.skipif(
    os.environ.get("NUMPROBE_REQUIRE_LIVE") == "1",
    reason="suite regression of locate's rounds: run in the oldest-torch lane")


def report_of(out):
    return json.loads((out / "locate_report.json").read_text())


def test_locate_ends_at_the_injected_eps(tmp_path):
    out = tmp_path / "loc"
    p = locate(out, demo(), demo("ln_eps"), "--check-repro")
    assert p.returncode == 0, p.stdout + p.stderr
    rep = report_of(out)
    assert [r["round"] for r in rep["rounds"]] == [0, 1, 2, 3, 4]
    pre = rep["rounds"][0]
    assert pre["reproducibility"]["reproducible"] is True
    assert pre["structural_differences"] == []  # same ops, one argument differs
    assert pre["environment_differences"] == []
    # round 1: block 1's second LayerNorm is the first module whose outputs part
    assert rep["rounds"][1]["finding"]["entry"] == "Module.blocks.1.ln2.LayerNorm.forward.0"
    r2 = rep["rounds"][2]
    assert r2["runs"][1]["config"]["statistics"]["scope"] == ["Module.blocks.1.ln2.LayerNorm.forward.0"] * 2
    # round 2: inside it, the layer_norm call with the other eps (the fourth layer norm of the step)
    ans = rep["answer"]
    assert ans["entry"] == "Functional.layer_norm.3.forward"
    assert ans["reason"] == "args_differ"
    assert ans["module"] == "Module.blocks.1.ln2.LayerNorm.forward.0"
    assert "tiny_models.py" in ans["source_line"]  # the user's line, not torch's
    # round 3: tensor evidence of that call, and where its outputs differ most
    ev = rep["rounds"][3]["tensor_evidence"]
    assert any(r["NPU Name"].startswith("Functional.layer_norm.3.forward.output") for r in ev["rows"])
    assert ev["largest_difference"]["abs_diff"] > 0
    # round 4: replayed with its recorded eps the API is right: its arguments are what is off
    assert ans["acc_check"] == "pass"
    assert "already off" in rep["verdict"] and "Functional.layer_norm.3.forward" in rep["verdict"]
    md = (out / "locate_report.md").read_text()
    assert "Round 4" in md and rep["verdict"] in md
    for k in range(4):
        assert (out / f"round{k}" / "golden").is_dir() and (out / f"round{k}" / "target").is_dir()
    # less data than a full dump: the tensor round saved only the 3 listed calls' tensors
    saved = list((out / "round3" / "target").rglob("*.npy"))
    assert 0 < len(saved) < 40
    assert "[round 2]" in p.stderr  # progress per round


def test_locate_names_a_kernel_bug(tmp_path):
    """gelu computed with the tanh approximation while called as the exact one: acc-check of the
    recorded inputs fails, so the verdict is the API itself."""
    out = tmp_path / "loc"
    p = locate(out, demo(), demo("gelu_kernel"))
    assert p.returncode == 0, p.stdout + p.stderr
    rep = report_of(out)
    assert rep["answer"]["call"] == "Functional.gelu.0"
    assert rep["answer"]["acc_check"] == "error"
    assert "kernel bug" in rep["verdict"]


def test_an_op_only_the_target_calls_is_named_with_its_line(tmp_path):
    """A forward hook adds exp().log() to block 1's fc1 in the target: a one-sided op, named as
    the structural first divergence at the hook's own source line."""
    out = tmp_path / "loc"
    p = locate(out, demo(), demo("extra_scale"))
    assert p.returncode == 0, p.stdout + p.stderr
    ans = report_of(out)["answer"]
    assert ans["entry"] == "Tensor.exp.0.forward" and ans["reason"] == "structure_differs"
    assert ans["module"] == "Module.blocks.1.fc1.Linear.forward.0"
    assert "locate_demo.py" in ans["source_line"] and "exp().log()" in ans["source_line"]


def _suite_pair(tmp_path, model, fault, steps=1):
    """A pair of the diagnosis suite's real training scripts (bench/diagnosis/run_one.py)."""
    diag = ROOT / "bench" / "diagnosis" / "run_one.py"
    cmd = f"{sys.executable} {diag} --model {model} --out {tmp_path / 'scratch'} --steps {steps}"
    return cmd, f"{cmd} --fault {fault}"


def test_an_api_dumped_by_one_run_only_keeps_its_answer_without_tensor_evidence(tmp_path):
    """Regression (bench_locate on the held-out tf_pool_pads): the first divergence is an API the
    target does not call at that number and it has no neighbours, so round 3's tensor dump is
    empty on the target side and its compare writes nothing. locate stopped without any report;
    now round 2's answer stands and the report says why the evidence is missing."""
    out = tmp_path / "loc"
    p = locate(out, *_suite_pair(tmp_path, "tfenc", "tf_pool_pads"),
               env={"BENCH_DIAGNOSIS_HELD3": "1"})
    assert p.returncode == 0, p.stdout + p.stderr
    rep = report_of(out)
    assert rep["status"] == "located_without_evidence"
    assert rep["answer"]["reason"] == "structure_differs"
    assert "no tensor evidence" in rep["verdict"] and "compare wrote no" in rep["evidence_error"]
    assert "no tensor evidence" in (out / "locate_report.md").read_text()


@oldest_lane_only
def test_a_fault_in_the_root_modules_own_code_is_searched_in_the_root_scope(tmp_path):
    """Regression (held3 tf_sqrt_d_rounded): the embeddings are scaled by 5.66 instead of sqrt(32)
    in the root module's forward, outside every submodule. Round 1's first divergent module got
    an input no module made, and so did every module around it: round 2 searches the root scope
    (the whole step, no scope) and names the `* scale` whose scalar argument changed (it named
    the first API inside the encoder layer whose input differed)."""
    out = tmp_path / "loc"
    p = locate(out, *_suite_pair(tmp_path, "tfenc", "tf_sqrt_d_rounded"),
               env={"BENCH_DIAGNOSIS_HELD3": "1"})
    assert p.returncode == 0, p.stdout + p.stderr
    rep = report_of(out)
    r1 = rep["rounds"][1]
    assert r1["finding"]["reason"] in ("inputs_already_differ", "parameters_differ")
    assert "root scope" in r1["next"]
    assert rep["rounds"][2]["runs"][1]["config"]["statistics"]["scope"] == []
    ans = rep["answer"]
    assert ans["entry"] == "Tensor.__mul__.0.forward" and ans["reason"] == "args_differ"
    assert "* scale" in ans["source_line"]


@oldest_lane_only
def test_a_loss_argument_seen_first_in_backward_is_named_at_the_loss(tmp_path):
    """Regression (held3 gpt_ignore_index): cross_entropy(ignore_index=1) changes the loss, which
    is outside every module; L0 first sees the head's parameter gradient. Its backward received
    a gradient no module made, so the root scope is searched and the loss call is named."""
    out = tmp_path / "loc"
    p = locate(out, *_suite_pair(tmp_path, "gpt", "gpt_ignore_index"),
               env={"BENCH_DIAGNOSIS_HELD3": "1"})
    assert p.returncode == 0, p.stdout + p.stderr
    rep = report_of(out)
    assert rep["rounds"][1]["finding"]["entry"].startswith("Module.head.Linear.")
    ans = rep["answer"]
    assert ans["entry"] == "Functional.cross_entropy.0.forward" and ans["reason"] == "args_differ"


@oldest_lane_only
def test_an_optimizer_fault_is_followed_into_the_next_step(tmp_path):
    """Regression (held3 lstm_maximize): SGD(maximize=True) leaves step 0 bitwise equal; the
    parameters differ from step 1. Round 1 captures steps 0..2 at L0 (--follow-steps 2), finds
    step 1 first, and the later rounds capture step 1 alone: the first op reading an updated
    parameter is named, at step 1."""
    out = tmp_path / "loc"
    p = locate(out, *_suite_pair(tmp_path, "lstm", "lstm_maximize", steps=2),
               env={"BENCH_DIAGNOSIS_HELD3": "1"})
    assert p.returncode == 0, p.stdout + p.stderr
    rep = report_of(out)
    assert rep["rounds"][1]["runs"][1]["config"]["step"] == [0, 1, 2]
    assert "part first in step 1" in rep["rounds"][1]["next"]
    assert all(r["runs"][1]["config"]["step"] == [1] for r in rep["rounds"][2:4])
    ans = rep["answer"]
    assert ans["entry"] == "Functional.embedding.0.forward" and ans["step"] == 1
    assert ans["reason"] == "parameters_differ"
    # --follow-steps 0: step 0 alone, where nothing parts
    out0 = tmp_path / "loc0"
    p = locate(out0, *_suite_pair(tmp_path, "lstm", "lstm_maximize", steps=2),
               "--follow-steps", "0", env={"BENCH_DIAGNOSIS_HELD3": "1"})
    assert p.returncode == 0, p.stdout + p.stderr
    assert report_of(out0)["status"] == "no_divergence"


@oldest_lane_only
def test_a_change_statistics_hide_is_found_with_md5_over_the_root_scope(tmp_path):
    """Regression (held3 tf_mask_off_by_one): a padding mask built with <= instead of <. L0 sees
    the attention module part (bitwise runs), but no API inside it parts by its statistics (the
    boolean mask's barely move): round "2b" repeats the search over the root scope with md5 and
    names the comparison that built the mask."""
    out = tmp_path / "loc"
    p = locate(out, *_suite_pair(tmp_path, "tfenc", "tf_mask_off_by_one"),
               env={"BENCH_DIAGNOSIS_HELD3": "1"})
    assert p.returncode == 0, p.stdout + p.stderr
    rep = report_of(out)
    assert [r["round"] for r in rep["rounds"]] == [0, 1, 2, "2b", 3, 4]
    r2b = rep["rounds"][3]
    assert r2b["runs"][1]["config"]["statistics"] == {"scope": [], "list": [],
                                                      "summary_mode": "md5"}
    assert rep["answer"]["entry"] == "Tensor.__le__.0.forward"
    assert rep["answer"]["module"] is None  # root code, not the module round 1 named


@oldest_lane_only
def test_an_input_whose_statistics_hide_a_change_is_followed_to_its_maker(tmp_path):
    """Regression (held3 resnet_bgr): the batch's channels flipped (x.flip(1)) before the model:
    the flipped tensor has the same statistics, so round 2 takes the first conv's output change
    for the conv's own; round 3's tensors show its input differs, and the root scope searched
    with md5 (rounds 2c, 3c) names the flip."""
    out = tmp_path / "loc"
    p = locate(out, *_suite_pair(tmp_path, "resnet", "resnet_bgr"),
               env={"BENCH_DIAGNOSIS_HELD3": "1"})
    assert p.returncode == 0, p.stdout + p.stderr
    rep = report_of(out)
    assert [r["round"] for r in rep["rounds"]] == [0, 1, 2, 3, "2c", "3c", 4]
    assert rep["rounds"][2]["finding"]["entry"] == "Functional.conv2d.0.forward"
    assert rep["answer"]["entry"] == "Tensor.flip.0.forward"
    assert "flip" in rep["answer"]["source_line"]


def test_locate_follows_the_origin_rank_over_gloo(tmp_path):
    """2 ranks averaging gradients with all_reduce; the fault (a perturbed fc1 row) on rank 1 only:
    compare's cross-rank ordering names rank 1 (rank 0's step 0 agrees up to the all_reduce, which
    L0 does not record), and the later rounds dump rank 1 alone."""
    out = tmp_path / "loc"
    extra = "--ranks 2 --fault-rank 1 --port {port}"
    p = locate(out, demo("", extra.format(port=29611)), demo("fc1_weight", extra.format(port=29612)))
    assert p.returncode == 0, p.stdout + p.stderr
    rep = report_of(out)
    origins = rep["rounds"][1]["summary"]["origins"]
    assert origins and origins[0]["rank"] == 1
    pairs = {p["rank"]: p["first_divergence"] for p in rep["rounds"][1]["summary"]["pairs"]}
    assert pairs[0] is None and pairs[1] == "Module.blocks.1.fc1.Linear.forward.0"
    assert rep["rounds"][2]["runs"][0]["config"]["rank"] == [1]
    assert sorted(p.name for p in (out / "round2" / "target" / "step0").iterdir()) == ["rank1"]
    ans = rep["answer"]
    assert ans["rank"] == 1 and ans["call"] == "Functional.linear.6"
    assert ans["module"] == "Module.blocks.1.fc1.Linear.forward.0"
    assert ans["reason"] == "parameters_differ"
    assert ans["acc_check"] == "pass"


def test_a_failing_run_stops_locate_with_its_code(tmp_path):
    out = tmp_path / "loc"
    failing = f"{PY} -c \"import sys; print('loading the data failed'); sys.exit(7)\""
    p = locate(out, demo(), failing)
    assert p.returncode == 7
    assert "loading the data failed" in p.stderr and "exit code 7" in p.stderr
    rep = report_of(out)
    assert rep["status"] == "run_failed" and rep["failure"]["code"] == 7
    assert [r["round"] for r in rep["rounds"]] == []  # stopped inside round 0


def test_locate_refuses_a_directory_it_did_not_write(tmp_path):
    user = tmp_path / "mine"
    user.mkdir()
    (user / "notes.txt").write_text("keep me")
    p = locate(user, "true", "true")
    assert p.returncode != 0 and "not empty" in p.stderr
    assert (user / "notes.txt").read_text() == "keep me"


def _capture(tmp_path, env_config):
    """The demo script (its own config: statistics at level mix into ./own) with NUMPROBE_CONFIG
    set to env_config, or unset."""
    env = dict(os.environ, PYTHONPATH=str(PYDIR))
    env.pop("NUMPROBE_CONFIG", None)
    if env_config is not None:
        env["NUMPROBE_CONFIG"] = str(env_config)
    return subprocess.run([PY, str(DEMO), "--dump", str(tmp_path / "own")], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120)


def test_numprobe_config_is_honoured_over_the_scripts_arguments(tmp_path):
    cfg = tmp_path / "forced.json"
    cfg.write_text(json.dumps({"task": "statistics", "level": "L0",
                               "dump_path": str(tmp_path / "forced"), "step": [0]}))
    p = _capture(tmp_path, cfg)
    assert p.returncode == 0, p.stderr
    assert not (tmp_path / "own").exists()
    d = rank_dir(tmp_path / "forced" / "step0")
    names = json.loads((d / "dump.json").read_text())["data"]
    assert names and all(n.startswith("Module.") for n in names)  # level L0, not the script's mix
    env = json.loads((d / "numprobe_env.json").read_text())
    assert env["runtime"] == "python" and env["num_threads"] == 1
    assert env["torch_version"] and "python_version" in env


def test_without_numprobe_config_the_script_decides(tmp_path):
    p = _capture(tmp_path, None)
    assert p.returncode == 0, p.stderr
    names = json.loads((rank_dir(tmp_path / "own" / "step0") / "dump.json").read_text())["data"]
    assert any(n.startswith("Functional.") for n in names)  # the script's level mix


def test_a_missing_numprobe_config_is_an_error_naming_it(tmp_path):
    p = _capture(tmp_path, tmp_path / "nope.json")
    assert p.returncode != 0
    assert "NUMPROBE_CONFIG" in p.stderr and "nope.json" in p.stderr


def test_cpp_debugger_honours_numprobe_config(tmp_path):
    exe = BUILD / "bin" / "train_mlp"
    if not exe.exists():
        pytest.fail(f"{exe} not built")
    cfg = tmp_path / "forced.json"
    cfg.write_text(json.dumps({"task": "statistics", "level": "L0",
                               "dump_path": str(tmp_path / "forced"), "step": [1]}))
    env = dict(os.environ, NUMPROBE_CONFIG=str(cfg))
    p = subprocess.run([str(exe), str(tmp_path / "own"), "mix"], env=env, capture_output=True,
                       text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert not (tmp_path / "own").exists()
    assert sorted(x.name for x in (tmp_path / "forced").iterdir()) == ["step1"]
    d = tmp_path / "forced" / "step1" / "rank"
    if not d.exists():
        d = rank_dir(tmp_path / "forced" / "step1")
    names = json.loads((d / "dump.json").read_text())["data"]
    assert names and all(n.startswith("Module.") for n in names)
    env_summary = json.loads((d / "numprobe_env.json").read_text())
    assert env_summary["runtime"] == "c++" and env_summary["num_threads"] == 1
    # and without the variable, the program's own options again
    env.pop("NUMPROBE_CONFIG")
    p = subprocess.run([str(exe), str(tmp_path / "own"), "L1"], env=env, capture_output=True,
                       text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert sorted(x.name for x in (tmp_path / "own").iterdir()) == ["step0", "step1", "step2"]


def test_a_spent_budget_stops_after_the_round_in_progress(tmp_path):
    out = tmp_path / "loc"
    p = locate(out, demo(), demo("ln_eps"), "--budget-minutes", "0")
    assert p.returncode == 2, p.stdout + p.stderr
    rep = report_of(out)
    assert rep["status"] == "budget_exhausted" and "before round 1" in rep["verdict"]
    assert [r["round"] for r in rep["rounds"]] == [0]


def test_a_golden_that_does_not_reproduce_itself_is_reported(tmp_path):
    out = tmp_path / "loc"
    p = locate(out, demo("", "--unseeded"), demo("ln_eps"), "--check-repro")
    assert p.returncode == 3, p.stdout + p.stderr
    rep = report_of(out)
    assert rep["status"] == "not_reproducible" and "not reproducible" in rep["verdict"]
    repro = rep["rounds"][0]["reproducibility"]
    assert repro["reproducible"] is False and repro["first_divergence"]["entry"].startswith("Module.")
    assert [r["round"] for r in rep["rounds"]] == [0]  # nothing compared against the target
