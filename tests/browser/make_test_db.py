#!/usr/bin/env python3
"""Test .vis.db files for the browser tests (tests/browser/graph_ui.test.mjs).

  make_test_db.py findings SRC DST   copy of msprobe's SRC with a numprobe_meta table (findings: the
                                     first divergence Functional.conv2d.0.forward on 0/0) and one
                                     node whose name, values and stack carry an XSS probe
  make_test_db.py scale DST N        a build graph of about N nodes in msprobe's schema: root ->
                                     100 modules -> 10 submodules -> APIs, with Module.big.0
                                     holding 10,000 APIs directly
"""
import json
import shutil
import sqlite3
import sys
import time

XSS = '<img src=x onerror=alert(1)><script>alert(123)</script><a>add_51111</a>'
SCHEMA = sys.path[0] + "/../../src/graph/vis_db_schema.h"


def schema_sql():
    """The CREATE statements of src/graph/vis_db_schema.h (its C string literals, joined)."""
    text = open(SCHEMA).read()
    out = {}
    for name in ("kCreateNodes", "kCreateStack", "kCreateConfig", "kCreateIndexes"):
        body = text.split(name + " =", 1)[1].split(";\n", 1)[0]
        parts = [p for p in body.split('"')[1::2]]
        out[name] = "".join(parts).replace("\\n", "\n")
    return out


def findings(src, dst):
    shutil.copyfile(src, dst)
    db = sqlite3.connect(dst)
    finding = {"node": "Functional.conv2d.0.forward", "side": "target",
               "row": "Functional.conv2d.0.forward.output.0", "reason": "output Max differs by 4.0",
               "direction": "forward", "module": "Module.conv1.Conv2d.forward.0", "score": 0.83,
               "input_discrepancy": 0.0, "output_discrepancy": 0.83, "tolerance": 0.001}
    second = dict(finding, node="Tensor.add_.0.forward", reason="second suspect")
    meta = {
        "format": "numprobe-graph 1", "mode": "statistics", "notes": ["test copy"],
        "findings": {"0/0": {"first_divergence": finding, "suspects": [finding, second],
                             "coverage": "compared", "target_dir": "t", "golden_dir": "g",
                             "counts": {"pass": 1, "warning": 0, "error": 1,
                                        "unmatched_target": 0, "unmatched_golden": 0}}},
    }
    db.execute("CREATE TABLE numprobe_meta (key TEXT PRIMARY KEY, value TEXT)")
    db.executemany("INSERT INTO numprobe_meta VALUES (?, ?)",
                   [(k, json.dumps(v)) for k, v in meta.items()])
    row = db.execute("SELECT * FROM tb_nodes WHERE id = 'NPU_0_0_Functional.conv2d.0.forward'").fetchone()
    cols = [d[1] for d in db.execute("PRAGMA table_info(tb_nodes)")]
    r = dict(zip(cols, row))
    r.update(id="NPU_0_0_" + XSS, node_name=XSS, up_node="DefaultModel", node_order=100000,
             matched_node_link="[]", stack_id="xss",
             input_data=json.dumps({XSS + ".input.0": {"type": XSS, "Max": XSS}}),
             output_data="{}")
    db.execute(f"INSERT INTO tb_nodes ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})",
               [r[c] for c in cols])
    db.execute("INSERT INTO tb_stack VALUES ('xss', ?)", (json.dumps(["File " + XSS + ", line 1"]),))
    db.commit()
    db.close()


def scale(dst, total):
    t0 = time.time()
    sql = schema_sql()
    db = sqlite3.connect(dst)
    db.execute("PRAGMA journal_mode = OFF")
    db.execute("PRAGMA synchronous = OFF")
    for k in ("kCreateNodes", "kCreateStack", "kCreateConfig"):
        db.execute(sql[k])
    colors = {"#FFFCF3": {"value": [0, 0.2], "description": "low"},
              "#FFEDBE": {"value": [0.2, 0.4], "description": ""},
              "#FFDC7F": {"value": [0.4, 0.6], "description": ""},
              "#FFC62E": {"value": [0.6, 0.8], "description": ""},
              "#FF704D": {"value": [0.8, 1], "description": "high"},
              "#C7C7C7": {"value": [], "description": "unmatched"}}
    db.execute("INSERT INTO tb_config VALUES ('1', 'build', 'summary', '{}', 0, 0, ?, '[0]', '[0]')",
               (json.dumps(colors),))
    db.execute("INSERT INTO tb_stack VALUES ('s', '[\"File model.py, line 1, in forward\"]')")
    data = json.dumps({"x.output.0": {"type": "torch.Tensor", "dtype": "torch.float32",
                                      "shape": "[8, 8]", "Max": "1.0", "Min": "0.0"}})
    order = [0]
    rows = []

    def add(name, kind, up, subs):
        rows.append(("NPU_0_0_" + name, "NPU_0_0", order[0], name, kind, up,
                     json.dumps(subs) if subs else "", None, None, 0, "[]", "s", None, None, 0,
                     data if kind == "1" else "{}", data if kind == "1" else "{}", "NPU", None, 0, 0))
        order[0] += 1

    big = 10000
    per_api = max(1, (total - big - 1 - 100 - 99 * 10) // (99 * 10))
    mods = ["Module.big.0"] + [f"Module.m{i}.Block.forward.0" for i in range(1, 100)]
    # Post-order: children before parents, as msprobe's node_order.
    apis = [f"Tensor.add.{j}.forward" for j in range(big)]
    for a in apis:
        add(a, "1", mods[0], None)
    add(mods[0], "0", "DefaultModel", apis)
    n = big
    for m in mods[1:]:
        subs = [f"{m}.sub{k}" for k in range(10)]
        for s in subs:
            kids = [f"Functional.linear.{n + j}.forward" for j in range(per_api)]
            n += per_api
            for a in kids:
                add(a, "1", s, None)
            add(s, "0", m, kids)
        add(m, "0", "DefaultModel", subs)
        if len(rows) > 200000:
            db.executemany("INSERT INTO tb_nodes VALUES (" + ",".join("?" * 21) + ")", rows)
            rows.clear()
    add("DefaultModel", "0", "", mods)
    db.executemany("INSERT INTO tb_nodes VALUES (" + ",".join("?" * 21) + ")", rows)
    db.executescript(sql["kCreateIndexes"])
    db.commit()
    db.close()
    print(f"scale db: {order[0]} nodes in {time.time() - t0:.1f} s", file=sys.stderr)


if __name__ == "__main__":
    if sys.argv[1] == "findings":
        findings(sys.argv[2], sys.argv[3])
    elif sys.argv[1] == "scale":
        scale(sys.argv[2], int(sys.argv[3]))
    else:
        sys.exit(__doc__)
