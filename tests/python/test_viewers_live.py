"""The viewers users open graph files in, live: TensorBoard with msprobe's graph plugin (graph_ascend),
checked in Debian's headless Chromium driven by Playwright.

Two installs of the plugin exist and both are served here: the one mindstudio-probe 26 ships inside itself
(this lane's venv) and the separate tb-graph-ascend package of msprobe 8.x users (.venv/viewer: the two
register one plugin name, so they cannot share a TensorBoard). Each serves, on loopback only, a .vis.db
that msprobe's own graph build made from a numprobe dump (target) and an msprobe dump (golden) of one
ResNet-18 training step on this lane's torch. numprobe writing its own .vis.db is issue 18; its graph
tests are meant to serve numprobe's file the same way.

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

from conftest import FIXTURES, PYDIR, ROOT, live

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
    return logs, db.name[:-len(".vis.db")]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(params=[label for label, _ in viewer_tensorboards()], scope="module")
def tensorboard(request, logdir):
    exe = dict(viewer_tensorboards())[request.param]
    port = free_port()
    log = open(logdir[0].parent / f"tensorboard_{request.param}.log", "w")
    proc = subprocess.Popen([str(exe), "--logdir", str(logdir[0]), "--host", "127.0.0.1", "--port", str(port)],
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
            text = (logdir[0].parent / f"tensorboard_{request.param}.log").read_text()
            pytest.fail(f"TensorBoard ({request.param}) did not start:\n{text[-3000:]}")
        time.sleep(0.5)
    yield request.param, base
    proc.terminate()
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
    log.close()


def test_plugin_lists_the_graph_file(tensorboard, logdir):
    import json
    _, base = tensorboard
    with urllib.request.urlopen(base + "/data/plugin/graph_ascend/load_meta_dir", timeout=30) as r:
        meta = json.loads(r.read())
    assert not meta.get("error"), meta
    assert meta["data"] == {"numprobe_vs_msprobe": {"type": "db", "tags": [logdir[1]]}}


def test_graph_of_numprobe_dump_renders_in_chromium(tensorboard, tmp_path):
    """The plugin's own page, in a real browser, draws both hierarchies of the graph msprobe built from
    numprobe's dump: the model root and ResNet-18's top modules appear on the target and golden sides."""
    viewer, base = tensorboard
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
