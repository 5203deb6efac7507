"""The viewers users open graph files in, live: TensorBoard with msprobe's graph plugin (graph_ascend),
checked in Debian's headless Chromium driven by Playwright.

Two installs of the plugin exist and both are served here: the one mindstudio-probe 26 ships inside itself
(this lane's venv) and the separate tb-graph-ascend package of msprobe 8.x users (.venv/viewer: the two
register one plugin name, so they cannot share a TensorBoard). Each serves, on loopback only, a .vis.db
that msprobe's own graph build made from a numprobe dump (target) and an msprobe dump (golden) of one
ResNet-18 training step on this lane's torch, and the .vis.db numprobe's own `numprobe graph` made from
the same two dumps (both must render; numprobe's must draw the hierarchy msprobe's build draws).

Skipped where the live readers are not installed (Debian's torch 1.13 lane), required in `make test-torch2`.
Screenshots go to $NUMPROBE_SCREENSHOT_DIR when set (else the test's tmp dir).
"""
import os
import pathlib
import shutil
import socket
import subprocess
import sys
import time
import urllib.request

import pytest

from conftest import CLI, FIXTURES, PYDIR, ROOT, live

live("msprobe")
live("tensorboard")
sync_playwright = live("playwright.sync_api").sync_playwright

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
VIEWER_VENV = pathlib.Path(os.environ.get("NUMPROBE_VIEWER_VENV", ROOT / ".venv" / "viewer"))
TRAIN = FIXTURES / "interop_torch113" / "train.py"
# Chromium's own network chatter is refused on these machines; keep it from trying.
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def viewer_tensorboards():
    """(label, tensorboard executable) for each graph_ascend install this lane can serve."""
    found = [("msprobe-bundled", pathlib.Path(sys.executable).parent / "tensorboard")]
    tb = VIEWER_VENV / "bin" / "tensorboard"
    if tb.exists():
        found.append(("tb-graph-ascend", tb))
    elif os.environ.get("NUMPROBE_REQUIRE_LIVE"):
        pytest.fail(f"no tb-graph-ascend viewer venv at {VIEWER_VENV} (scripts/setup_venv.sh viewer)")
    return found


@pytest.fixture(scope="module")
def logdir(tmp_path_factory):
    """A TensorBoard logdir with one run, numprobe_vs_msprobe/, built here."""
    tmp = tmp_path_factory.mktemp("viewers")
    ranks = {}
    for tool in ("np", "ms"):
        out = tmp / f"{tool}_dump"
        env = dict(os.environ, PYTHONPATH=str(PYDIR), MSPROBE_REF=str(tmp / "no_checkout"))
        p = subprocess.run([sys.executable, str(TRAIN), "resnet18", tool, "mix", str(out)], env=env,
                           capture_output=True, text=True, timeout=300)
        assert p.returncode == 0, p.stderr[-3000:]
        (ranks[tool],) = [d for d in (out / "step0").iterdir() if d.is_dir()]
    logs = tmp / "logs"
    built = logs / "numprobe_vs_msprobe"
    msprobe = pathlib.Path(sys.executable).parent / "msprobe"
    p = subprocess.run([str(msprobe), "graph_visualize", "-tp", str(ranks["np"]), "-gp", str(ranks["ms"]),
                        "-o", str(built)], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    (db,) = built.glob("*.vis.db")
    # numprobe's own graph of the same pair, in a logdir of its own (the plugin opens the first run).
    ours = tmp / "logs_numprobe" / "numprobe_graph"
    p = subprocess.run([str(CLI), "graph", "-t", str(ranks["np"]), "-g", str(ranks["ms"]), "-o",
                        str(ours / "numprobe.vis.db")], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    return logs, db.name[:-len(".vis.db")]


def read_nodes(db):
    """{(data_source, node_name): (node_type, up_node)} of a .vis.db, opened read-only and immutable
    (a WAL-mode file would otherwise get -shm/-wal files beside it)."""
    import sqlite3
    con = sqlite3.connect(f"file:{db}?immutable=1", uri=True)
    try:
        return {(src, name): (str(t), up) for src, name, t, up in
                con.execute("SELECT data_source, node_name, node_type, up_node FROM tb_nodes")}
    finally:
        con.close()


def test_numprobe_graph_draws_msprobes_hierarchy(logdir):
    """numprobe's graph of the numprobe-vs-msprobe ResNet-18 pair has every node msprobe's graph build
    drew, of the same type under the same parent (msprobe 26 itself, live). numprobe's extras are what
    msprobe drops: parameter grads of a module whose backward hook did not fire, and modules that
    construct.json names only as a parent (msprobe leaves them, and the APIs under them, unreachable;
    numprobe hangs them from the root)."""
    logs, name = logdir
    theirs = read_nodes(logs / "numprobe_vs_msprobe" / f"{name}.vis.db")
    ours = read_nodes(logs.parent / "logs_numprobe" / "numprobe_graph" / "numprobe.vis.db")
    assert len(theirs) > 100
    missing = sorted(k for k in theirs if k not in ours)
    assert not missing, missing[:10]
    moved = {k: (theirs[k], ours[k]) for k in theirs if theirs[k] != ours[k]}
    assert not moved, list(moved.items())[:5]
    import json
    orphans = set()
    for rank in (logs.parent / "np_dump" / "step0").iterdir(), (logs.parent / "ms_dump" / "step0").iterdir():
        for d in rank:
            construct = json.loads((d / "construct.json").read_text())
            orphans |= {p for p in construct.values() if isinstance(p, str) and p not in construct}
    allowed = {k for k in ours if k not in theirs and (".parameters_grad" in k[1] or k[1] in orphans)}
    grew = True
    while grew:  # and everything under an allowed node
        more = {k for k in ours if k not in theirs and k not in allowed and (k[0], ours[k][1]) in allowed}
        allowed |= more
        grew = bool(more)
    extra = [k for k in ours if k not in theirs and k not in allowed]
    assert not extra, extra[:10]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# (viewer, whose graph): msprobe's graph build of the pair, and numprobe's.
GRAPHS = ("msprobe", "numprobe")


@pytest.fixture(params=[(label, whose) for label, _ in viewer_tensorboards() for whose in GRAPHS],
                ids=lambda p: f"{p[0]}-{p[1]}", scope="module")
def tensorboard(request, logdir):
    viewer, whose = request.param
    exe = dict(viewer_tensorboards())[viewer]
    logs = logdir[0] if whose == "msprobe" else logdir[0].parent / "logs_numprobe"
    port = free_port()
    log_path = logdir[0].parent / f"tensorboard_{viewer}_{whose}.log"
    log = open(log_path, "w")
    proc = subprocess.Popen([str(exe), "--logdir", str(logs), "--host", "127.0.0.1", "--port", str(port)],
                            stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    deadline = time.time() + 90
    while True:
        try:
            with urllib.request.urlopen(base + "/data/plugins_listing", timeout=5) as r:
                if r.status == 200:
                    break
        except OSError:
            pass
        if proc.poll() is not None or time.time() > deadline:
            proc.kill()
            log.close()
            text = log_path.read_text()
            pytest.fail(f"TensorBoard ({viewer}, {whose}'s graph) did not start:\n{text[-3000:]}")
        time.sleep(0.5)
    yield f"{viewer}-{whose}", base, whose
    proc.terminate()
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
    log.close()


def test_plugin_lists_the_graph_file(tensorboard, logdir):
    import json
    _, base, whose = tensorboard
    with urllib.request.urlopen(base + "/data/plugin/graph_ascend/load_meta_dir", timeout=30) as r:
        meta = json.loads(r.read())
    assert not meta.get("error"), meta
    if whose == "msprobe":
        assert meta["data"] == {"numprobe_vs_msprobe": {"type": "db", "tags": [logdir[1]]}}
    else:
        assert meta["data"] == {"numprobe_graph": {"type": "db", "tags": ["numprobe"]}}


def test_graph_of_numprobe_dump_renders_in_chromium(tensorboard, tmp_path):
    """The plugin's own page, in a real browser, draws both hierarchies of the graph msprobe built from
    numprobe's dump, and of the graph numprobe built itself: the model root and ResNet-18's top modules
    appear on the target and golden sides."""
    viewer, base, _ = tensorboard
    shots = pathlib.Path(os.environ.get("NUMPROBE_SCREENSHOT_DIR", tmp_path))
    shots.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            page.goto(base + "/#graph_ascend")
            frame = None
            deadline = time.time() + 60
            while frame is None and time.time() < deadline:
                frame = next((f for f in page.frames if "/data/plugin/graph_ascend/" in f.url), None)
                page.wait_for_timeout(200)  # (Playwright's sync API handles its events only inside its calls)
            assert frame is not None, [f.url for f in page.frames]
            # Node labels are SVG <text name="N___<node>"> on the target (NPU) side, "B___<node>" on
            # the golden (bench) side.
            labels = [frame.locator(f'svg text[name="{side}___{node}"]') for side in ("N", "B")
                      for node in ("DefaultModel", "Module.relu.ReLU.forward.0")]
            try:
                for label_text in labels:
                    label_text.wait_for(state="visible", timeout=60_000)
            finally:
                page.screenshot(path=str(shots / f"tb_graph_{viewer}.png"))
        finally:
            browser.close()
