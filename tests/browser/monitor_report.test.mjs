// Browser test of `numprobe monitor-report`: a report of a small monitor output (written by the
// real sink through build/bin/monitor_write_sample: two CSV ranks, one with a markup-named tag, and
// a TensorBoard rank) opened from file:// in Debian's chromium via playwright-core.
// Run: node --test tests/browser/ (NUMPROBE_BIN / NUMPROBE_SAMPLE_BIN pick other builds).
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { createRequire } from "node:module";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const require = createRequire(path.join(root, "web/package.json"));
const { chromium } = require("playwright-core");

const BIN = process.env.NUMPROBE_BIN ?? path.join(root, "build/bin/numprobe");
const SAMPLE = process.env.NUMPROBE_SAMPLE_BIN ?? path.join(path.dirname(BIN), "monitor_write_sample");
const SHOTS = process.env.NUMPROBE_SCREENSHOT_DIR ?? path.join(root, "build/screenshots");
const HOSTILE = "0:</script><img src=x onerror=alert(1)>.weight";
const LAUNCH = {
  executablePath: process.env.NUMPROBE_CHROMIUM ?? "/usr/bin/chromium",
  args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync"],
};

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "numprobe-monitor-report-"));
fs.mkdirSync(SHOTS, { recursive: true });
let browser, page;

before(async () => {
  const base = path.join(tmp, "mon");
  execFileSync(SAMPLE, [base, "csv", "0", "hostile"]);
  execFileSync(SAMPLE, [base, "csv", "1"]);
  execFileSync(SAMPLE, [base, "tensorboard", "2"]);
  const html = path.join(tmp, "report.html");
  execFileSync(BIN, ["monitor-report", base, "-o", html]);
  browser = await chromium.launch(LAUNCH);
  page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  page.dialogs = [];
  page.on("dialog", (d) => { page.dialogs.push(d.message()); d.dismiss(); });
  page.errors = [];
  page.on("pageerror", (e) => page.errors.push(String(e)));
  await page.goto(pathToFileURL(html).href);
  await page.waitForSelector("body[data-ready='1']");
});

after(async () => {
  await browser?.close();
  fs.rmSync(tmp, { recursive: true, force: true });
});

test("charts are drawn, one series per tag of the selected rank", async () => {
  assert.deepEqual(page.errors, []);
  const charts = await page.$$eval(".chart", (cs) => cs.map((c) => ({
    key: c.dataset.group + "/" + c.dataset.op, series: Number(c.dataset.series),
    canvas: !!c.querySelector("canvas"),
  })));
  const norm = charts.find((c) => c.key === "grad_reduced/norm");
  assert.ok(norm && norm.canvas, JSON.stringify(charts));
  // rank 0 (selected first): fc1.weight, fc2.weight and the markup-named tag.
  assert.equal(norm.series, 3);
  assert.ok(charts.some((c) => c.key === "actv/max"));
});

test("the rank selector changes the series", async () => {
  await page.selectOption("#rank", "1");
  const r1 = await page.$eval(".chart[data-group='grad_reduced'][data-op='norm']", (c) => c.dataset.series);
  assert.equal(r1, "2");
  await page.selectOption("#rank", "all");
  const all = await page.$eval(".chart[data-group='grad_reduced'][data-op='norm']", (c) => c.dataset.series);
  assert.equal(all, "7");  // 3 + 2 + 2 (TensorBoard rank 2)
  await page.selectOption("#rank", "0");
});

test("anomalies are marked on the charts and listed", async () => {
  const markers = await page.$$eval(".chart[data-group='grad_reduced'][data-op='norm'] .anomaly-marker",
    (ms) => ms.map((m) => m.title));
  assert.ok(markers.length >= 1);
  assert.match(markers[0], /AnomalyTurbulence/);
  const rows = await page.$$eval("tr.anomaly", (rs) => rs.length);
  assert.equal(rows, 6);  // 2 per rank: the norm jump and the NaN
});

test("a hostile tag renders as text", async () => {
  assert.deepEqual(page.dialogs, []);
  assert.equal(await page.$$eval("img", (is) => is.length), 0);
  const labels = await page.$$eval(".u-legend .u-label", (ls) => ls.map((l) => l.textContent));
  assert.ok(labels.includes(HOSTILE), JSON.stringify(labels));
  await page.screenshot({ path: path.join(SHOTS, "monitor_report.png"), fullPage: false });
});
