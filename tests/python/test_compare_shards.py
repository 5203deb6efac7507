"""compare --shard / merge (docs/scale.md): a generated 64-rank pair whose fault on one rank reaches
the others through a collective. One process, shards run as separate processes under the Slurm array
variables, and mpirun -np 2 must all give the same summary.json, byte for byte, and the same origin."""
import json
import os
import shutil
import subprocess

import pytest

from conftest import CLI
from sharded_dumps import write_pair

FAULT_RANK, FAULT_LAYER = 37, 3


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    return write_pair(tmp_path_factory.mktemp("ranks64"), ranks=64, steps=2, layers=8,
                      fault_rank=FAULT_RANK, fault_layer=FAULT_LAYER)


@pytest.fixture(scope="module")
def unsharded(pair, tmp_path_factory, cli):
    out = tmp_path_factory.mktemp("one") / "out"
    cli("compare", "-t", pair[0], "-g", pair[1], "-o", out)
    return (out / "summary.json").read_bytes()


def shard_env(**extra):
    """The environment minus every launcher variable the test did not set itself (a CI runner inside
    Slurm or MPI must not decide the shard)."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("SLURM_", "OMPI_", "PMI_", "PMIX_")) and k not in ("RANK", "WORLD_SIZE")}
    env.update(extra)
    return env


def run(*args, env=None, check=True):
    p = subprocess.run([str(CLI), *map(str, args)], capture_output=True, text=True,
                       env=env or shard_env())
    if check and p.returncode != 0:
        raise AssertionError(f"numprobe {' '.join(map(str, args))}: {p.returncode}\n{p.stdout}\n{p.stderr}")
    return p


def test_the_unsharded_compare_finds_the_origin(unsharded):
    s = json.loads(unsharded)
    assert len(s["pairs"]) == 128
    assert [(o["step"], o["rank"], o["entry"], o["collectives_before"]) for o in s["origins"]] == [
        (0, FAULT_RANK, f"Functional.gelu.{FAULT_LAYER}.forward", FAULT_LAYER),
        (1, FAULT_RANK, f"Functional.gelu.{FAULT_LAYER}.forward", FAULT_LAYER)]
    assert len(s["origins"][0]["received_by"]) == 63


def test_one_shard_of_one_merges_to_the_same_bytes(pair, unsharded, tmp_path):
    run("compare", "-t", pair[0], "-g", pair[1], "-o", tmp_path, "--shard", "1/1")
    shard = json.loads((tmp_path / "shard-1-of-1" / "summary.json").read_text())
    assert shard["shard"]["index"] == 1 and shard["shard"]["count"] == 1
    run("merge", tmp_path / "shard-1-of-1", "-o", tmp_path / "merged")
    assert (tmp_path / "merged" / "summary.json").read_bytes() == unsharded


def test_four_slurm_array_tasks_merge_to_the_same_bytes(pair, unsharded, tmp_path):
    procs = []
    for task in range(4):  # --array=0-3: four processes at once, as Slurm would start them
        env = shard_env(SLURM_ARRAY_TASK_ID=str(task), SLURM_ARRAY_TASK_COUNT="4",
                        SLURM_ARRAY_TASK_MIN="0", SLURM_ARRAY_JOB_ID="4242")
        procs.append(subprocess.Popen([str(CLI), "compare", "-t", str(pair[0]), "-g", str(pair[1]),
                                       "-o", str(tmp_path), "--shard", "auto"], env=env,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    for p in procs:
        out, err = p.communicate()
        assert p.returncode == 0, out + err
        assert "SLURM_ARRAY_TASK_ID/SLURM_ARRAY_TASK_COUNT" in out
    ranks = []
    for k in range(1, 5):
        s = json.loads((tmp_path / f"shard-{k}-of-4" / "summary.json").read_text())
        assert s["shard"]["run"] == "slurm:4242"
        ranks.append(sorted({p["rank"] for p in s["pairs"]}))
        # Each shard's CSVs are its own ranks' only.
        csvs = sorted(f.name for f in (tmp_path / f"shard-{k}-of-4").glob("*.csv"))
        assert len(csvs) == 2 * len(ranks[-1])
    assert ranks == [list(range(16 * i, 16 * i + 16)) for i in range(4)]
    p = run("merge", tmp_path, "-o", tmp_path / "merged")
    assert (tmp_path / "merged" / "summary.json").read_bytes() == unsharded
    assert f"Functional.gelu.{FAULT_LAYER}.forward on rank {FAULT_RANK}" in p.stdout
    # The shard directories given one by one, in another order, merge the same.
    run("merge", *[tmp_path / f"shard-{k}-of-4" for k in (3, 1, 4, 2)], "-o", tmp_path / "m2")
    assert (tmp_path / "m2" / "summary.json").read_bytes() == unsharded


def test_mpirun_two_ranks_shard_and_merge_by_themselves(pair, unsharded, tmp_path):
    mpirun = shutil.which("mpirun")
    if not mpirun:
        pytest.fail("mpirun not found: scripts/setup.sh installs openmpi-bin")
    env = shard_env(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
                    OMPI_MCA_plm_rsh_agent="")
    p = subprocess.run([mpirun, "--oversubscribe", "-np", "2", str(CLI), "compare", "-t", str(pair[0]),
                        "-g", str(pair[1]), "-o", str(tmp_path), "--shard", "auto", "--merge",
                        "--merge-timeout", "120"], capture_output=True, text=True, env=env, timeout=300,
                       # mpirun forwards the two ranks' output in chunks: a chunk boundary may
                       # split a UTF-8 character (the report's "·") between two ranks' bytes.
                       errors="replace")
    assert p.returncode == 0, p.stdout + p.stderr
    assert "OMPI_COMM_WORLD_RANK/OMPI_COMM_WORLD_SIZE" in p.stdout
    assert "merged 2 shards of 2" in p.stdout
    assert (tmp_path / "summary.json").read_bytes() == unsharded


def test_a_missing_shard_is_reported_with_its_ranks(pair, tmp_path):
    for k in (1, 2, 4):
        run("compare", "-t", pair[0], "-g", pair[1], "-o", tmp_path, "--shard", f"{k}/4")
    p = run("merge", tmp_path, "-o", tmp_path / "merged", check=False)
    assert p.returncode == 1
    assert "shard 3/4: ranks 32-47" in p.stderr
    s = json.loads((tmp_path / "merged" / "summary.json").read_text())
    assert len(s["pairs"]) == 96
    assert "not compared: shard 3/4: ranks 32-47 wrote no summary" in s["problems"]
    # The fault's rank was in the missing shard: the origin found is a rank that received it.
    assert all(o["entry"].startswith("Distributed.") for o in s["origins"])
    # A failed shard (a directory without its summary) counts as missing too.
    (tmp_path / "shard-3-of-4").mkdir()
    assert run("merge", tmp_path, "-o", tmp_path / "m2", check=False).returncode == 1


def test_a_rerun_replaces_its_shard_and_a_failed_rerun_leaves_it_missing(pair, unsharded, tmp_path):
    for k in (1, 2):
        run("compare", "-t", pair[0], "-g", pair[1], "-o", tmp_path, "--shard", f"{k}/2")
    run("compare", "-t", pair[0], "-g", pair[1], "-o", tmp_path, "--shard", "2/2")
    run("merge", tmp_path, "-o", tmp_path)  # the merged summary may sit beside the shards
    assert (tmp_path / "summary.json").read_bytes() == unsharded
    # A rerun that fails (its golden is gone) removes the stale summary rather than keeping it.
    bad = run("compare", "-t", pair[0], "-g", tmp_path / "nowhere", "-o", tmp_path, "--shard", "2/2",
              check=False)
    assert bad.returncode != 0
    assert not (tmp_path / "shard-2-of-2" / "summary.json").exists()
    p = run("merge", tmp_path, "-o", tmp_path / "m", check=False)
    assert p.returncode == 1 and "shard 2/2" in p.stderr


def test_shards_of_different_compares_or_twice_the_same_shard_are_refused(pair, tmp_path):
    run("compare", "-t", pair[0], "-g", pair[1], "-o", tmp_path / "a", "--shard", "1/2")
    run("compare", "-t", pair[0], "-g", pair[1], "-o", tmp_path / "b", "--shard", "1/3")
    p = run("merge", tmp_path / "a", tmp_path / "b", "-o", tmp_path / "m", check=False)
    assert p.returncode == 1 and "different compares" in p.stderr
    run("compare", "-t", pair[0], "-g", pair[1], "-o", tmp_path / "c", "--shard", "1/2")
    p = run("merge", tmp_path / "a", tmp_path / "c", "-o", tmp_path / "m", check=False)
    assert p.returncode == 1 and "given twice" in p.stderr
    assert not (tmp_path / "m" / "summary.json").exists()


def test_bad_shard_arguments_and_inputs_are_clear_errors(pair, tmp_path):
    for spec in ("0/4", "5/4", "x", "1/0", "2"):
        p = run("compare", "-t", pair[0], "-g", pair[1], "-o", tmp_path, "--shard", spec, check=False)
        assert p.returncode == 1 and "--shard" in p.stderr, spec
    p = run("compare", "-t", pair[0], "-g", pair[1], "-o", tmp_path, "--shard", "auto", check=False)
    assert p.returncode == 1 and "none of SLURM_ARRAY_TASK_ID" in p.stderr
    p = run("compare", "-t", pair[0], "-g", pair[1], "-o", tmp_path, "--shard", "auto", check=False,
            env=shard_env(RANK="4", WORLD_SIZE="4"))
    assert p.returncode == 1 and "RANK/WORLD_SIZE" in p.stderr
    p = run("compare", "-t", pair[0], "-g", pair[1], "-o", tmp_path, "--merge", check=False)
    assert p.returncode == 1 and "--merge goes with --shard" in p.stderr
    # An unsharded summary is no shard's; a truncated one names its file.
    run("compare", "-t", pair[0], "-g", pair[1], "-o", tmp_path / "plain")
    p = run("merge", tmp_path / "plain", "-o", tmp_path / "m", check=False)
    assert p.returncode == 1 and "no \"shard\" block" in p.stderr
    run("compare", "-t", pair[0], "-g", pair[1], "-o", tmp_path / "t", "--shard", "1/1")
    f = tmp_path / "t" / "shard-1-of-1" / "summary.json"
    f.write_bytes(f.read_bytes()[:-200])
    p = run("merge", tmp_path / "t", "-o", tmp_path / "m", check=False)
    assert p.returncode == 1 and str(f) in p.stderr
    p = run("merge", tmp_path / "nowhere", "-o", tmp_path / "m", check=False)
    assert p.returncode == 1 and "nowhere" in p.stderr


def test_more_shards_than_ranks_leave_some_empty(pair, unsharded, tmp_path):
    small = write_pair(tmp_path / "small", ranks=3, steps=1, layers=4, fault_rank=1, fault_layer=2)
    ref = tmp_path / "ref"
    run("compare", "-t", small[0], "-g", small[1], "-o", ref)
    for k in range(1, 6):
        p = run("compare", "-t", small[0], "-g", small[1], "-o", tmp_path / "o", "--shard", f"{k}/5")
        assert p.returncode == 0
    run("merge", tmp_path / "o", "-o", tmp_path / "m")
    assert (tmp_path / "m" / "summary.json").read_bytes() == (ref / "summary.json").read_bytes()


def graph_content(path):
    """Every table of a .vis.db in a fixed order, the schema and indexes included."""
    import sqlite3
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return {t: db.execute(f"SELECT * FROM {t} ORDER BY 1").fetchall()
                for t in ("tb_nodes", "tb_stack", "tb_config", "numprobe_meta")} | {
            "schema": db.execute("SELECT name, sql FROM sqlite_master ORDER BY name").fetchall()}
    finally:
        db.close()


def test_graph_shards_merge_to_the_whole_graph(pair, tmp_path):
    whole = tmp_path / "whole.vis.db"
    run("graph", "-t", pair[0], "-g", pair[1], "-o", whole)
    for rank in range(3):  # torchrun's variables
        p = run("graph", "-t", pair[0], "-g", pair[1], "-o", tmp_path / "g", "--shard", "auto",
                env=shard_env(RANK=str(rank), WORLD_SIZE="3", TORCHELASTIC_RUN_ID="r1"))
        assert "RANK/WORLD_SIZE" in p.stdout
    p = run("merge", tmp_path / "g", "-o", tmp_path / "m")
    assert "merged 3 graph shards of 3" in p.stdout
    merged = graph_content(tmp_path / "m" / "graph.vis.db")
    assert merged == graph_content(whole)
    assert len(merged["tb_nodes"]) > 64 * 2 * 2 * 24  # every rank and step, both sides
    # One shard missing: the merge still writes the rest, names the ranks, and exits 1.
    (tmp_path / "g" / "shard-2-of-3" / "graph.vis.db").unlink()
    p = run("merge", tmp_path / "g", "-o", tmp_path / "m2", check=False)
    assert p.returncode == 1 and "shard 2/3: ranks 21-41" in p.stderr
    notes = dict(graph_content(tmp_path / "m2" / "graph.vis.db")["numprobe_meta"])["notes"]
    assert "not in this graph: shard 2/3: ranks 21-41" in notes


def test_compare_and_graph_shards_in_one_directory_merge_together(pair, unsharded, tmp_path):
    for k in (1, 2):
        run("compare", "-t", pair[0], "-g", pair[1], "-o", tmp_path, "--shard", f"{k}/2")
        run("graph", "-t", pair[0], "-g", pair[1], "-o", tmp_path, "--shard", f"{k}/2")
    p = run("merge", tmp_path, "-o", tmp_path)
    assert (tmp_path / "summary.json").read_bytes() == unsharded
    assert (tmp_path / "graph.vis.db").exists() and "numprobe serve" in p.stdout
    # A compare summary is no graph, and a plain graph is no shard's.
    run("graph", "-t", pair[0], "-g", pair[1], "-o", tmp_path / "plain.vis.db")
    p = run("merge", tmp_path / "plain.vis.db", "-o", tmp_path / "x", check=False)
    assert p.returncode == 1 and "not a shard's graph" in p.stderr


def test_the_documented_slurm_array_script_simulated(pair, unsharded, tmp_path):
    """examples/scale/compare_array.sbatch run as Slurm would run its tasks (--array=0-3): the
    script's #SBATCH lines are comments to bash; the array variables are what sbatch sets."""
    from conftest import ROOT
    script = ROOT / "examples" / "scale" / "compare_array.sbatch"
    for task in range(4):
        env = shard_env(SLURM_ARRAY_TASK_ID=str(task), SLURM_ARRAY_TASK_COUNT="4",
                        SLURM_ARRAY_TASK_MIN="0", SLURM_ARRAY_JOB_ID="99", TARGET=str(pair[0]),
                        GOLDEN=str(pair[1]), OUT=str(tmp_path), NUMPROBE=str(CLI))
        p = subprocess.run(["bash", str(script)], capture_output=True, text=True, env=env)
        assert p.returncode == 0, p.stdout + p.stderr
    run("merge", tmp_path, "-o", tmp_path)
    assert (tmp_path / "summary.json").read_bytes() == unsharded


def test_torchrun_workers_shard_and_merge(pair, unsharded, tmp_path):
    """The torchrun line of docs/scale.md: numprobe as torchrun's workers (--no-python), RANK and
    WORLD_SIZE from the launcher. Needs torch >= 2: Debian's torch 1.13 torchrun fails on Python
    3.11 before it starts a worker (its redirects map), so that lane skips it; the torch 2.x lane
    (NUMPROBE_REQUIRE_LIVE) must run it."""
    import sys
    torch = pytest.importorskip("torch")
    if int(torch.__version__.split(".")[0]) < 2:
        if os.environ.get("NUMPROBE_REQUIRE_LIVE"):
            pytest.fail("the torch 2.x lane runs torch < 2")
        pytest.skip("torchrun of torch 1.13 does not start on Python 3.11")
    p = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--nproc_per_node=2",
                        "--no-python", str(CLI), "compare", "-t", str(pair[0]), "-g", str(pair[1]),
                        "-o", str(tmp_path), "--shard", "auto", "--merge", "--merge-timeout", "120"],
                       capture_output=True, text=True, env=shard_env(), timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "RANK/WORLD_SIZE" in p.stdout
    assert (tmp_path / "summary.json").read_bytes() == unsharded
