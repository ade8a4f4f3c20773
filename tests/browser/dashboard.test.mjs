// Browser test of the admin dashboard (CTest label `browser`): drives Debian's chromium with
// playwright-core against the admin listener started by admin_dashboard_server (fake backend).
//   node tests/browser/dashboard.test.mjs SERVER_BINARY OUT_DIR
// Checks that the page loads, asks for the token, shows every room with its status and charts,
// and that the queue_all and suspended toggles PATCH the room and change the table. Saves
// OUT_DIR/dashboard.png.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { chromium } from "playwright-core";

const [serverBinary, outDir] = process.argv.slice(2);
if (!serverBinary || !outDir) {
  console.error("usage: node dashboard.test.mjs SERVER_BINARY OUT_DIR");
  process.exit(2);
}
mkdirSync(outDir, { recursive: true });
const TOKEN = "dashboard-test-token";

function startServer() {
  const child = spawn(serverBinary, ["--token", TOKEN], { stdio: ["pipe", "pipe", "inherit"] });
  return new Promise((resolve, reject) => {
    let out = "";
    const timer = setTimeout(() => reject(new Error("server did not start")), 10000);
    child.on("exit", (code) => reject(new Error("server exited with " + code)));
    child.stdout.on("data", (chunk) => {
      out += chunk;
      const m = /listening (\d+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve({ child, port: Number(m[1]) });
      }
    });
  });
}

async function status(port, id) {
  const res = await fetch(`http://127.0.0.1:${port}/rooms/${id}/status`, {
    headers: { Authorization: "Bearer " + TOKEN },
  });
  assert.equal(res.status, 200);
  return res.json();
}

const step = (name) => console.log("ok - " + name);
// Waits use locators, never page.waitForFunction: the page's CSP forbids eval, which that
// polling needs.

const { child, port } = await startServer();
let browser;
let failed = false;
try {
  browser = await chromium.launch({
    executablePath: "/usr/bin/chromium",
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"],
  });
  const page = await browser.newPage({ viewport: { width: 1360, height: 1000 } });
  const errors = [];
  page.on("pageerror", (e) => errors.push(String(e)));
  page.on("console", (m) => {
    // The 401 before the token, the 403 for the wrong one and the 400 of the CSV of an unknown
    // event are expected; script errors are not.
    if (m.type() === "error" && !/\b40[013]\b|Unauthorized|Forbidden/.test(m.text())) {
      errors.push(m.text());
    }
  });

  // Poll fast so the charts fill in seconds, not minutes.
  await page.goto(`http://127.0.0.1:${port}/?poll_ms=400`);
  assert.match(await page.title(), /waitroom/);
  step("the page loads");

  await page.locator("#alert", { hasText: "needs a token" }).waitFor();
  assert.equal(await page.locator("#conn-text").textContent(), "token needed");
  step("without a token the page says one is needed");

  await page.getByLabel("Admin token").fill("wrong-token");
  await page.getByRole("button", { name: "Use token" }).click();
  await page.locator("#alert", { hasText: "refused" }).waitFor();
  step("a wrong token is reported as refused");

  await page.getByLabel("Admin token").fill(TOKEN);
  await page.getByRole("button", { name: "Use token" }).click();
  const rows = page.locator("#rooms-body tr[data-room]");
  await rows.nth(3).waitFor();
  assert.deepEqual(await rows.evaluateAll((trs) => trs.map((tr) => tr.dataset.room)),
    ["shop", "launch", "docs", "legacy"]);
  assert.equal(await page.evaluate(() => sessionStorage.getItem("waitroom-admin-token")), TOKEN);
  assert.equal(await page.locator("#alert").isVisible(), false);
  step("with the token every room is listed, in config order");

  // The preview link fetches the page with the token and shows it in a sandboxed frame, where
  // the page's own inline style and script run (the dashboard's CSP lets them, and nothing
  // else, since the frame has no origin of its own).
  await page.getByRole("link", { name: "Preview the queued page of room shop" }).click();
  await page.locator("#preview[open]").waitFor();
  const frame = page.frameLocator("#preview-frame");
  await frame.locator("body[data-ran=yes]").waitFor();
  assert.match(await frame.locator("p").textContent(), /^shop 0 \[\]$/);
  assert.equal(await frame.locator("p").evaluate((p) => getComputedStyle(p).color),
               "rgb(1, 2, 3)");
  await page.getByRole("button", { name: /close/i }).click();
  assert.equal(await page.locator("#preview[open]").count(), 0);
  step("a room's page preview shows in the dashboard, its style and script working");

  const badge = (id) => page.locator(`#rooms-body tr[data-room="${id}"] .badge[data-status]`);
  assert.equal(await badge("shop").getAttribute("data-status"), "queueing");
  assert.equal(await badge("launch").getAttribute("data-status"), "event_prequeueing");
  assert.equal(await badge("docs").getAttribute("data-status"), "not_queueing");
  assert.equal(await badge("legacy").getAttribute("data-status"), "suspended");
  assert.equal(await badge("launch").textContent(), "Event prequeueing");
  step("each room shows its status");

  for (const id of ["shop", "launch", "docs", "legacy"]) {
    const card = page.locator(`article.room[data-room="${id}"]`);
    assert.equal(await card.locator(":scope > .charts canvas[role=img]").count(), 4, id);
  }
  // Wait for several polls, then check a chart has been drawn (some non-transparent pixels).
  await page.waitForTimeout(4000);
  const inked = await page.evaluate(() => {
    const c = document.querySelector('article.room[data-room="shop"] canvas[data-chart="active"]');
    const d = c.getContext("2d").getImageData(0, 0, c.width, c.height).data;
    let n = 0;
    for (let i = 3; i < d.length; i += 4) { if (d[i] > 0) { n++; } }
    return n;
  });
  assert.ok(inked > 500, "the active-users chart of shop is drawn (" + inked + " pixels)");
  const label = await page.locator('article.room[data-room="shop"] canvas[data-chart="active"]')
    .getAttribute("aria-label");
  assert.match(label, /^Active users of room shop: [\d,]+ \/ 500$/);
  step("each room has its four live charts, drawn and labelled");

  // The analytics charts: five per room, drawn from the rows of GET /rooms/{id}/analytics.
  const inkOf = (id, chart) => page.evaluate(([id, chart]) => {
    const c = document.querySelector(
      `article.room[data-room="${id}"] .analytics canvas[data-chart="${chart}"]`);
    const d = c.getContext("2d").getImageData(0, 0, c.width, c.height).data;
    let n = 0;
    for (let i = 3; i < d.length; i += 4) { if (d[i] > 0) { n++; } }
    return n;
  }, [id, chart]);
  for (const id of ["shop", "launch", "docs", "legacy"]) {
    assert.equal(await page.locator(
      `article.room[data-room="${id}"] .analytics canvas[role=img]`).count(), 5, id);
  }
  const shopCard = page.locator('article.room[data-room="shop"] .analytics');
  const caption = (key) => shopCard.locator(`[data-value="${key}"]`).textContent();
  assert.match(await caption("queue_wait"), /^p50 \d+ (s|min \d\d s) · p90 \d+ (s|min \d\d s)$/);
  assert.match(await caption("honesty"), /^median [+−]?\d+ s · bias [+−]?\d+ s · n [\d,]+$/);
  assert.match(await caption("fairness"), /^\d+(\.\d)? % of [\d,]+$/);
  assert.match(await caption("exits"), /^\d+ · \d+ · \d+$/);
  assert.match(await caption("origin"), /^p50 \d+ min \d\d s$/);
  // Lines and dots on top of the axes: the empty room's charts have the axes only.
  const bare = await inkOf("docs", "honesty");
  for (const chart of ["queue_wait", "honesty", "fairness", "exits", "origin"]) {
    const ink = await inkOf("shop", chart);
    assert.ok(ink > bare + 300, `the ${chart} chart of shop is drawn (${ink} vs ${bare} pixels)`);
  }
  assert.equal(await page.locator('article.room[data-room="docs"] .analytics [data-value="queue_wait"]')
    .textContent(), "p50 – · p90 –");
  assert.match(await shopCard.locator('canvas[data-chart="honesty"]').getAttribute("aria-label"),
    /^Wait shown vs actual of room shop, last 30 minutes: median /);
  step("each room has its five analytics charts, drawn from its minutes and labelled");

  const saved = async (trigger) => {
    const [download] = await Promise.all([page.waitForEvent("download"), trigger()]);
    const file = await download.path();
    return { name: download.suggestedFilename(), text: readFileSync(file, "utf8") };
  };
  let csv = await saved(() => page.getByRole("button",
    { name: "Download the last hour of room shop as CSV" }).click());
  assert.equal(csv.name, "shop-analytics.csv");
  let lines = csv.text.trim().split("\r\n");
  assert.match(lines[0], /^room,minute_start,admitted,admitted_from_queue,/);
  assert.ok(lines.length >= 25, "half an hour of minutes: " + lines.length);
  assert.match(lines[1], /^"shop",\d{4}-\d\d-\d\dT\d\d:\d\d:00Z,\d+,\d+,/);
  await page.getByLabel("Event name for the CSV of room launch").fill("spring launch");
  csv = await saved(() => page.getByRole("button",
    { name: "Download the named event of room launch as CSV" }).click());
  lines = csv.text.trim().split("\r\n");
  assert.ok(lines.length >= 15 && lines.length <= 22, "the event's 20 minutes: " + lines.length);
  await page.getByLabel("Event name for the CSV of room launch").fill("no such event");
  await page.getByRole("button", { name: "Download the named event of room launch as CSV" })
    .click();
  await page.locator("#alert", { hasText: "event must name one of the room's events" }).waitFor();
  step("the CSV of the last hour and of an event download from the dashboard; a bad one says why");

  const toggle = (id, field) =>
    page.locator(`#rooms-body tr[data-room="${id}"] button[role=switch][data-field="${field}"]`);
  assert.equal(await toggle("docs", "queue_all").getAttribute("aria-checked"), "false");
  await page.getByRole("switch", { name: "Queue all for room docs" }).click();
  await page.locator('#rooms-body tr[data-room="docs"] .badge[data-status="queueing"]')
    .waitFor();
  // The switch follows within a refresh of the table (the badge may come first).
  await page.locator('#rooms-body tr[data-room="docs"] button[role=switch]' +
    '[data-field="queue_all"][aria-checked="true"]').waitFor();
  assert.equal((await status(port, "docs")).queue_all, true);
  step("the queue_all toggle PATCHes the room and the table shows it queueing");

  await page.getByRole("switch", { name: "Suspended for room legacy" }).click();
  await page.locator('#rooms-body tr[data-room="legacy"] .badge[data-status="not_queueing"]')
    .waitFor();
  assert.equal(await toggle("legacy", "suspended").getAttribute("aria-checked"), "false");
  assert.equal((await status(port, "legacy")).suspended, false);
  step("the suspend toggle lifts the suspension");

  await page.getByRole("switch", { name: "Suspended for room shop" }).click();
  await page.locator('#rooms-body tr[data-room="shop"] .badge[data-status="suspended"]')
    .waitFor();
  assert.equal((await status(port, "shop")).suspended, true);
  step("the suspend toggle suspends a room");

  await page.waitForTimeout(1500);
  const shot = path.join(outDir, "dashboard.png");
  await page.screenshot({ path: shot, fullPage: true });
  step("screenshot saved to " + shot);

  assert.deepEqual(errors, []);
  step("no script errors");
} catch (e) {
  failed = true;
  console.error("not ok - " + (e.stack || e));
} finally {
  if (browser) {
    await browser.close();
  }
  child.stdin.end();
  setTimeout(() => child.kill("SIGKILL"), 3000).unref();
}
process.exitCode = failed ? 1 : 0;
