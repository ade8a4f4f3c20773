// Browser test of the queue page (CTest label `browser`): drives Debian's chromium with
// playwright-core against a real waitroomd in front of the demo origin, with a room of one place.
//   node tests/browser/queue_page.test.mjs WAITROOMD DEMO_ORIGIN OUT_DIR
// Visitor A gets in; visitor B (another browser context, so another cookie jar) gets the queue
// page with its position and wait, the page refreshes by itself, and once A's session has ended B
// lands on the shop without anyone touching the page. Saves OUT_DIR/queue-page.png and
// OUT_DIR/queue-final.png. Ends by itself within about a minute and kills what it started.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { chromium } from "playwright-core";

const [waitroomd, demoOrigin, outDir] = process.argv.slice(2);
if (!waitroomd || !demoOrigin || !outDir) {
  console.error("usage: node queue_page.test.mjs WAITROOMD DEMO_ORIGIN OUT_DIR");
  process.exit(2);
}
mkdirSync(outDir, { recursive: true });
const workDir = mkdtempSync(path.join(os.tmpdir(), "waitroom-queue-page-"));
const children = [];
let browser;

const step = (name) => console.log("ok - " + name);

function killAll() {
  for (const c of children) {
    if (c.exitCode === null && c.signalCode === null) {
      c.kill("SIGKILL");
    }
  }
  rmSync(workDir, { recursive: true, force: true });
}

// The whole test has one deadline; past it everything started is killed and the test fails.
const watchdog = setTimeout(() => {
  console.error("not ok - the test did not finish within 60 s");
  killAll();
  process.exit(1);
}, 60_000);

function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.on("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

// Starts `program args`, resolves with the first match of `pattern` in its stdout+stderr.
function startProcess(program, args, pattern, what) {
  const child = spawn(program, args, { stdio: ["ignore", "pipe", "pipe"] });
  children.push(child);
  return new Promise((resolve, reject) => {
    let out = "";
    const timer = setTimeout(() => reject(new Error(what + " did not start:\n" + out)), 15_000);
    child.on("exit", (code) => reject(new Error(what + " exited with " + code + ":\n" + out)));
    const onData = (chunk) => {
      out += chunk;
      const m = pattern.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve(m);
      }
    };
    child.stdout.on("data", onData);
    child.stderr.on("data", onData);
  });
}

let failed = false;
try {
  const originPort = await freePort();
  await startProcess(demoOrigin, ["--listen", `127.0.0.1:${originPort}`], /listening on/,
    "the demo origin");

  // One place; 1.5× time: A's 5 s session (product time) ends 3–10 s after A's visit, and B's
  // browser refreshing every few seconds stays well within the abandonment margin. The time
  // scale stays below 2 on purpose: the sync task measures its slot lease (2 × sync_interval)
  // in configured milliseconds against the scaled clock, so from a scale of 2 on the lease
  // lapses between syncs and a visitor may be admitted into a full room (see the disabled
  // integration test Room.DISABLED_NeverAdmitsOverTheLimitAcrossWorkersUnderTimeScale).
  const config = path.join(workDir, "config.yaml");
  writeFileSync(config, [
    'listen: ["127.0.0.1:0"]',
    `origin: {url: "http://127.0.0.1:${originPort}", connect_timeout: 2s, timeout: 5s}`,
    "threads: 1",
    'admin: {listen: ""}',
    "state: {backend: local, sync_interval: 1s}",
    "testing: {time_scale: 1.5}",
    "rooms:",
    '  - {name: "Demo shop", total_active_users: 1, new_users_per_minute: 100,',
    "     session_duration: 5s, refresh_interval: 20s}",
    "",
  ].join("\n"));
  const m = await startProcess(waitroomd, ["-c", config], /listening on http:\/\/[^\s:]+:(\d+)/,
    "waitroomd");
  const url = `http://127.0.0.1:${m[1]}/`;
  step("waitroomd is up in front of the demo origin at " + url);

  browser = await chromium.launch({
    executablePath: "/usr/bin/chromium",
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
      "--disable-dev-shm-usage"],
  });
  const errors = [];

  // Visitor A takes the one place, then leaves (its context closes, so it goes idle).
  const a = await browser.newContext();
  const pageA = await a.newPage();
  const resA = await pageA.goto(url);
  assert.equal(resA.status(), 200);
  await pageA.locator("h1", { hasText: "Demo Shop" }).waitFor({ timeout: 5000 });
  const cookiesA = await a.cookies();
  assert.ok(cookiesA.some((c) => c.name === "_cfwaitingroom"), "A holds the room cookie");
  await a.close();
  step("visitor A reaches the origin's page");

  // Visitor B: the queue page, with its position and wait.
  const b = await browser.newContext({ viewport: { width: 900, height: 900 } });
  const pageB = await b.newPage();
  pageB.on("pageerror", (e) => errors.push(String(e)));
  let navigations = 0;
  pageB.on("framenavigated", (f) => {
    if (f === pageB.mainFrame()) {
      navigations++;
    }
  });
  const resB = await pageB.goto(url);
  assert.equal(resB.status(), 200);
  const headers = resB.headers();
  assert.equal(headers["cache-control"], "no-store");
  assert.match(headers["refresh"] ?? "", /^\d+$/);
  assert.match(await pageB.title(), /^You are in line – Demo shop$/);
  await pageB.locator("h1", { hasText: "You are in line" }).waitFor({ timeout: 2000 });
  const position = await pageB.locator(".stat", { hasText: "People ahead of you" })
    .locator("dd").textContent();
  assert.match(position.trim(), /^\d+$/, "the position is a number: " + position);
  const wait = await pageB.locator(".stat", { hasText: "Estimated wait" })
    .locator("dd").textContent();
  assert.match(wait.trim(), /^\d+ minutes?$|hour/, "the wait is shown: " + wait);
  const countdown = Number(await pageB.locator("#countdown").textContent());
  assert.ok(countdown >= 0 && countdown <= Number(headers["refresh"]),
    "the page counts down to its refresh: " + countdown);
  const queueShot = path.join(outDir, "queue-page.png");
  await pageB.screenshot({ path: queueShot, fullPage: true });
  step(`visitor B gets the queue page: ${position.trim()} ahead, wait ${wait.trim()}, ` +
    `refresh in ${headers["refresh"]} s (screenshot ${queueShot})`);

  // No goto from here on: every navigation is the page refreshing itself.
  const first = navigations;
  await pageB.waitForEvent("framenavigated", {
    predicate: (f) => f === pageB.mainFrame(),
    timeout: 15_000,
  });
  step("the queue page refreshes by itself");

  await pageB.locator("h1", { hasText: "Demo Shop" }).waitFor({ timeout: 30_000 });
  assert.match(await pageB.title(), /^Demo Shop$/);
  const finalShot = path.join(outDir, "queue-final.png");
  await pageB.screenshot({ path: finalShot, fullPage: true });
  step(`visitor B lands on the origin's page by itself after ${navigations - first} ` +
    `refresh(es) (screenshot ${finalShot})`);

  assert.deepEqual(errors, []);
  step("no script errors");
} catch (e) {
  failed = true;
  console.error("not ok - " + (e.stack || e));
} finally {
  if (browser) {
    await browser.close().catch(() => {});
  }
  clearTimeout(watchdog);
  killAll();
}
process.exitCode = failed ? 1 : 0;
