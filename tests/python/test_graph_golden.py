"""`numprobe graph` against msprobe's own graph file of the same pair (golden_graph_mstt: msprobe 8.3.3's
compare graph of ResNet-50 step 0 vs step 1), read with Python's sqlite3 and json as second readers:
every tensor row's fields (statistics as msprobe rounds them, msprobe's metric columns) carry the values
msprobe wrote, and the CLI's output and exit codes are what a user reads."""
import json
import sqlite3

import pytest

GOLDEN = "golden_graph_mstt/compare_resnet50_step0_vs_step1.vis.db"


def node_data(db):
    """{(data_source, node_name): {row: fields}} with input and output rows together."""
    con = sqlite3.connect(f"file:{db}?immutable=1", uri=True)
    try:
        out = {}
        for src, name, inp, outp in con.execute(
                "SELECT data_source, node_name, input_data, output_data FROM tb_nodes"):
            rows = json.loads(inp or "{}")
            rows.update(json.loads(outp or "{}"))
            out[(src, name)] = rows
        return out
    finally:
        con.close()


@pytest.fixture(scope="module")
def resnet_graph(cli, fixtures, tmp_path_factory):
    out = tmp_path_factory.mktemp("graph") / "resnet.vis.db"
    pair = fixtures / "quick_start_resnet50_gpu_mix_statistics"
    p = cli("graph", "-t", pair / "step0", "-g", pair / "step1", "-o", out)
    return out, p.stdout


def test_tensor_rows_carry_msprobes_values(resnet_graph, fixtures):
    ours, theirs = node_data(resnet_graph[0]), node_data(fixtures / GOLDEN)
    compared, differ = 0, []
    for key, rows in theirs.items():
        for row, fields in rows.items():
            if fields.get("type") != "torch.Tensor":
                continue  # scalars: msprobe's graph diffs them, compare's table says N/A (docs/graph.md)
            mine = ours[key][row]
            for field, value in fields.items():
                if field in ("Result", "Err_message"):
                    continue  # msprobe 8.3.3's own verdict text; numprobe's is Status / Reason
                compared += 1
                if str(mine.get(field)) != str(value):
                    differ.append((key, row, field, mine.get(field), value))
    assert compared > 50_000
    assert not differ, differ[:10]


def test_cli_prints_the_file_the_first_divergence_and_the_serve_line(resnet_graph):
    out, stdout = resnet_graph
    assert f"-> {out}" in stdout
    assert "first divergence Functional.conv2d.0.forward" in stdout
    assert f"numprobe serve {out}" in stdout


def test_bad_input_names_the_file_and_exits_nonzero(cli, tmp_path):
    bad = tmp_path / "step0" / "rank0"
    bad.mkdir(parents=True)
    (bad / "dump.json").write_text('{"task": "statistics", "data": {"x": [1,}')
    p = cli("graph", "-t", bad, "-o", tmp_path / "out", check=False)
    assert p.returncode != 0
    assert "dump.json" in p.stderr
    assert not (tmp_path / "out").exists() or not list((tmp_path / "out").glob("*.vis.db"))


def test_compare_json_parallel_merge_is_reported_unsupported(cli, fixtures, tmp_path):
    pair = fixtures / "quick_start_resnet50_gpu_mix_statistics"
    cfg = tmp_path / "compare.json"
    cfg.write_text(json.dumps({"npu_path": str(pair / "step0"), "bench_path": str(pair / "step1"),
                               "is_print_compare_log": True,
                               "parallel_merge": {"npu": {"rank_size": 2, "tp": 2, "pp": 1, "vpp": 1}}}))
    p = cli("graph", "-i", cfg, "-o", tmp_path / "g.vis.db")
    assert "parallel_merge is not supported" in p.stderr
    con = sqlite3.connect(f"file:{tmp_path / 'g.vis.db'}?immutable=1", uri=True)
    notes = json.loads(con.execute("SELECT value FROM numprobe_meta WHERE key='notes'").fetchone()[0])
    con.close()
    assert any("parallel_merge" in n for n in notes)
