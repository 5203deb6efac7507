// Browser tests of `numprobe serve` and its viewer: the real binary (NUMPROBE_BIN, default
// build/bin/numprobe) on --port 0, driven through Debian's /usr/bin/chromium by playwright-core
// (web/node_modules; no browser is downloaded). Run: node --test tests/browser/
// Screenshots go to NUMPROBE_SCREENSHOT_DIR (default build/screenshots/). The scale test prints
// its timings and asserts none of them.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { spawn, execFileSync } from "node:child_process";
import { createRequire } from "node:module";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const require = createRequire(path.join(root, "web/package.json"));
const { chromium } = require("playwright-core");

const BIN = process.env.NUMPROBE_BIN ?? path.join(root, "build/bin/numprobe");
const SHOTS = process.env.NUMPROBE_SCREENSHOT_DIR ?? path.join(root, "build/screenshots");
const GOLDEN_DB = path.join(root,
  "../shared/fixtures/msprobe/golden_graph_mstt/compare_resnet50_step0_vs_step1.vis.db");
const XSS = "<img src=x onerror=alert(1)><script>alert(123)</script><a>add_51111</a>";
const LAUNCH = {
  executablePath: process.env.NUMPROBE_CHROMIUM ?? "/usr/bin/chromium",
  args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync"],
};

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "numprobe-browser-"));
fs.mkdirSync(SHOTS, { recursive: true });

// Starts `numprobe serve file --port 0`; resolves with { url, proc } once it printed its line.
function serve(file) {
  return new Promise((resolve, reject) => {
    const proc = spawn(BIN, ["serve", file, "--port", "0"], { stdio: ["ignore", "pipe", "pipe"] });
    let out = "", err = "";
    proc.stderr.on("data", (d) => (err += d));
    proc.stdout.on("data", (d) => {
      out += d;
      const m = out.match(/^numprobe serve: (http:\/\/127\.0\.0\.1:\d+\/) \((.+)\)\n/);
      if (m) resolve({ url: m[1], proc });
    });
    proc.on("exit", (code) => reject(new Error(`numprobe serve exited ${code}: ${err}`)));
  });
}

function stop(s) {
  if (s && s.proc.exitCode === null) s.proc.kill("SIGTERM");
}

async function openPage(browser, url) {
  const page = await browser.newPage({ viewport: { width: 1500, height: 900 } });
  page.dialogs = [];
  page.on("dialog", (d) => { page.dialogs.push(d.message()); d.dismiss(); });
  page.errors = [];
  page.on("pageerror", (e) => page.errors.push(String(e)));
  await page.goto(url);
  await page.waitForSelector("body[data-ready='1']");
  return page;
}

const row = (side, name) => `#pane-${side} .row[data-name="${name.replace(/"/g, '\\"')}"]`;

async function selected(page, side) {
  return page.$eval(`#pane-${side}`, (p) => p.querySelector(".row.selected")?.dataset.name ?? null);
}

// Clears the page's "selected" mark first: a selection still in flight from an earlier step must
// not satisfy a wait for this search's selection (the panel would then show the earlier node).
async function search(page, q) {
  await page.evaluate(() => { delete document.body.dataset.selected; });
  await page.fill("#search", q);
  await page.press("#search", "Enter");
}

let browser;
before(async () => { browser = await chromium.launch(LAUNCH); });
after(async () => {
  await browser?.close();
  fs.rmSync(tmp, { recursive: true, force: true });
});

describe("msprobe's own graph file", () => {
  let server, page;
  before(async () => {
    server = await serve(GOLDEN_DB);
    page = await openPage(browser, server.url);
  });
  after(() => stop(server));

  test("loads with the roots in both panes", async () => {
    await page.waitForSelector(row("target", "DefaultModel"));
    await page.waitForSelector(row("golden", "DefaultModel"));
    // The root starts expanded: its first children are there.
    await page.waitForSelector(row("target", "Module.conv1.Conv2d.forward.0"));
    assert.match(await page.textContent("#file"), /compare_resnet50_step0_vs_step1\.vis\.db/);
    await page.screenshot({ path: path.join(SHOTS, "graph_loaded.png") });
  });

  test("expands a module", async () => {
    await page.click(`${row("target", "Module.conv1.Conv2d.forward.0")} .twisty`);
    await page.waitForSelector(row("target", "Functional.conv2d.0.forward"));
  });

  test("search expands to the hit, selects it, and selects its match in the golden pane", async () => {
    await search(page, "Tensor.add_.0.forward");
    await page.waitForFunction(() => document.body.dataset.selected === "target:Tensor.add_.0.forward");
    assert.equal(await selected(page, "target"), "Tensor.add_.0.forward");
    await page.waitForSelector(`${row("golden", "Tensor.add_.0.forward")}.selected`);
    assert.ok(await page.$eval("#hits", (h) => h.textContent.includes("Tensor.add_.0.forward")));
  });

  test("clicking a golden node selects its match in the target pane", async () => {
    await page.click(`${row("golden", "Module.conv1.Conv2d.forward.0")} .name`);
    await page.waitForSelector(`${row("target", "Module.conv1.Conv2d.forward.0")}.selected`);
  });

  test("colours of known nodes are the legend's", async () => {
    const swatchColor = (sel) => page.$eval(`${sel} .swatch`, (s) => getComputedStyle(s).backgroundColor);
    const legend = (c) => page.$eval(`.legend-item[data-color="${c}"] .swatch`,
      (s) => getComputedStyle(s).backgroundColor);
    await search(page, "Functional.conv2d.0.forward");
    await page.waitForSelector(`${row("target", "Functional.conv2d.0.forward")}.selected`);
    await page.waitForSelector(`${row("golden", "Functional.conv2d.0.forward")}.selected`);
    assert.equal(await page.$eval(`${row("target", "Functional.conv2d.0.forward")} .swatch`,
      (s) => s.dataset.color), "#FF704D");
    assert.equal(await swatchColor(row("target", "Functional.conv2d.0.forward")), await legend("#FF704D"));
    assert.equal(await swatchColor(row("golden", "Functional.conv2d.0.forward")), await legend("#FF704D"));
    await search(page, "Tensor.add_.0.forward");
    await page.waitForSelector(`${row("target", "Tensor.add_.0.forward")}.selected`);
    assert.equal(await swatchColor(row("target", "Tensor.add_.0.forward")), await legend("#FFDC7F"));
  });

  test("the node panel shows both sides' statistics, the stack and the chain", async () => {
    await search(page, "Functional.conv2d.0.forward");
    await page.waitForFunction(() => document.body.dataset.selected === "target:Functional.conv2d.0.forward");
    const panel = await page.textContent("#panel");
    for (const s of ["Functional.conv2d.0.forward.output.0", "MaxRelativeErr", "Max diff", "torch.float32",
      "api_registry.py", "Module.conv1.Conv2d.forward.0"]) {
      assert.ok(panel.includes(s), `panel lacks ${s}`);
    }
    // target and golden columns both filled (golden Max 4.890287 of step 1)
    assert.ok(panel.includes("4.890287"));
    await page.screenshot({ path: path.join(SHOTS, "graph_node_panel.png") });
  });

  test("filters list unmatched nodes and nodes of a colour", async () => {
    await page.selectOption("#filter", "unmatched");
    // The list of the previous search is replaced once the filter's answer is in.
    await page.waitForFunction(() => document.querySelector("#hits .hits-title")?.textContent.startsWith("unmatched"));
    const greys = await page.$$eval("#hits li .swatch", (s) => s.map((x) => x.dataset.color));
    assert.ok(greys.length > 0);
    assert.ok(greys.every((c) => c === "#C7C7C7"));
    await page.selectOption("#filter", "color:#FF704D");
    await page.waitForSelector('#hits li[data-name="Functional.conv2d.0.forward"]');
    await page.click('#hits li[data-name="Functional.conv2d.0.forward"]');
    await page.waitForSelector(`${row("target", "Functional.conv2d.0.forward")}.selected`);
    await page.waitForSelector(`${row("golden", "Functional.conv2d.0.forward")}.selected`);
  });

  test("no findings: the first-divergence button is disabled and says why", async () => {
    assert.equal(await page.$eval("#first-div", (b) => b.disabled), true);
    assert.match(await page.$eval("#first-div", (b) => b.title), /No findings/);
    assert.deepEqual(page.errors, []);
  });

  test("bad parameters are 4xx with an error; paths never reach the file system", async () => {
    const u = server.url;
    const cases = [
      ["api/children?step=7&rank=0&side=target", 404],
      ["api/children?step=x", 400],
      ["api/children?side=npu", 400],
      ["api/children?node=nope", 404],
      ["api/node?step=0&rank=0&side=target", 400],
      ["api/node?node=nope", 404],
      ["api/search?q=", 400],
      ["api/search?q=a&limit=0", 400],
      ["api/filter?kind=color:red", 400],
      ["api/nothing", 404],
      ["nothing.html", 404],
    ];
    for (const [p, status] of cases) {
      const r = await fetch(u + p);
      assert.equal(r.status, status, p);
      assert.equal(typeof (await r.json()).error, "string", p);
    }
    // Traversal: raw paths (fetch would normalize them), so over a socket.
    for (const p of ["/../../etc/passwd", "/%2e%2e/%2e%2e/etc/passwd", "/api/../x", "/..%2f..%2fetc%2fpasswd",
      "/app.js/../../../etc/passwd", "//etc/passwd"]) {
      const status = await rawStatus(u, p);
      assert.ok(status >= 400 && status < 500, `${p}: ${status}`);
    }
    const r = await fetch(u);
    assert.equal(r.headers.get("x-content-type-options"), "nosniff");
    assert.match(r.headers.get("content-security-policy"), /default-src 'self'/);
  });
});

async function rawStatus(url, rawPath) {
  const net = await import("node:net");
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const s = net.connect(Number(port), hostname, () =>
      s.write(`GET ${rawPath} HTTP/1.1\r\nHost: ${hostname}\r\nConnection: close\r\n\r\n`));
    let data = "";
    s.on("data", (d) => (data += d));
    s.on("end", () => resolve(Number(data.split(" ")[1])));
    s.on("error", reject);
  });
}

describe("numprobe findings and an XSS probe", () => {
  let server, page;
  before(async () => {
    const db = path.join(tmp, "with_findings.vis.db");
    execFileSync("python3", [path.join(root, "tests/browser/make_test_db.py"), "findings", GOLDEN_DB, db]);
    server = await serve(tmp);  // a directory: its newest .vis.db
    page = await openPage(browser, server.url);
  });
  after(() => stop(server));

  test("go to first divergence selects it in both panes and shows the finding", async () => {
    assert.equal(await page.$eval("#first-div", (b) => b.disabled), false);
    await page.click("#first-div");
    await page.waitForSelector(`${row("target", "Functional.conv2d.0.forward")}.selected`);
    await page.waitForSelector(`${row("golden", "Functional.conv2d.0.forward")}.selected`);
    await page.waitForFunction(() => document.querySelector("#panel")?.textContent.includes("output Max differs"));
    assert.ok(await page.$eval(row("target", "Functional.conv2d.0.forward"),
      (r) => r.textContent.includes("first divergence")));
    await page.selectOption("#filter", "suspects");
    await page.waitForSelector('#hits li[data-name="Tensor.add_.0.forward"]');
    await page.screenshot({ path: path.join(SHOTS, "graph_first_divergence.png") });
  });

  test("a node named with markup renders as text", async () => {
    await search(page, "onerror");
    await page.waitForFunction((x) => document.body.dataset.selected === `target:${x}`, XSS);
    const name = await page.$eval("#pane-target .row.selected .name", (n) => n.textContent);
    assert.equal(name, XSS);
    const panel = await page.textContent("#panel");
    assert.ok(panel.includes(`File ${XSS}, line 1`));
    assert.equal(await page.$$eval("#main img, #main script, #main a, #hits a", (e) => e.length), 0);
    assert.equal(await page.$$eval("script", (e) => e.length), 1);  // app.js only
    await page.waitForTimeout(200);
    assert.deepEqual(page.dialogs, []);
    assert.deepEqual(page.errors, []);
    await page.screenshot({ path: path.join(SHOTS, "graph_xss_as_text.png") });
  });
});

describe("scale: a 1,000,000-node graph", () => {
  let server, page;
  const db = path.join(tmp, "scale.vis.db");
  before(async () => {
    const t0 = performance.now();
    execFileSync("python3", [path.join(root, "tests/browser/make_test_db.py"), "scale", db, "1000000"]);
    console.log(`scale: generated ${db} in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
    server = await serve(db);
  });
  after(() => { stop(server); fs.rmSync(db, { force: true }); });

  test("time to first screen and to expand a 10,000-child module (printed, not asserted)", async () => {
    for (const q of ["api/children?node=DefaultModel", "api/children?node=Module.big.0",
      "api/node?node=Tensor.add.9999.forward", "api/search?q=tensor.add.9999.&limit=50"]) {
      const t = performance.now();
      const r = await fetch(server.url + q);
      await r.arrayBuffer();
      console.log(`scale: server ${q}: ${(performance.now() - t).toFixed(1)} ms (HTTP ${r.status})`);
    }
    page = await browser.newPage({ viewport: { width: 1500, height: 900 } });
    await page.goto(server.url);
    await page.waitForSelector(row("target", "Module.big.0"));
    const firstScreen = await page.evaluate(() => performance.now());
    console.log(`scale: first screen (navigation start -> root's children drawn): ${firstScreen.toFixed(0)} ms`);
    const expand = await page.evaluate(async () => {
      const t0 = performance.now();
      document.querySelector('#pane-target .row[data-name="Module.big.0"] .twisty').click();
      while (!document.querySelector('#pane-target .row[data-name="Tensor.add.0.forward"]')) {
        await new Promise((r) => requestAnimationFrame(r));
      }
      return performance.now() - t0;
    });
    console.log(`scale: expand Module.big.0 (10,000 children) until its rows are drawn: ${expand.toFixed(0)} ms`);
    const rows = await page.$$eval("#pane-target .row", (r) => r.length);
    console.log(`scale: rows in the DOM after the expand: ${rows}`);
    assert.ok(rows < 200, "virtualized: only the viewport's rows are in the DOM");
    const scroll = await page.evaluate(async () => {
      const v = document.querySelector("#pane-target .viewport");
      const t0 = performance.now();
      v.scrollTop = 22 * 9000;
      await new Promise((r) => requestAnimationFrame(r));
      const found = !!document.querySelector('#pane-target .row[data-name="Tensor.add.8999.forward"]');
      return [performance.now() - t0, found];
    });
    console.log(`scale: scroll to row 9000 and draw: ${scroll[0].toFixed(0)} ms`);
    assert.ok(scroll[1]);
    await page.screenshot({ path: path.join(SHOTS, "graph_scale_10k.png") });
  });
});
