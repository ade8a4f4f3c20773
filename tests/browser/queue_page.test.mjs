// Browser test of the queue page (CTest label `browser`): drives Debian's chromium with
// playwright-core against a real waitroomd in front of the demo origin, with a room of one place.
//   node tests/browser/queue_page.test.mjs WAITROOMD DEMO_ORIGIN OUT_DIR
// Visitor A gets in. Visitor B, without JavaScript, gets the queue page with its position in the
// tab title, the page reloads itself through the Refresh header, and once A's session has ended
// B lands on the shop without anyone touching the page. Visitor C, with JavaScript, in a tab in
// the background, asks to be notified; when its turn comes the hidden tab's title says so, a
// notification is shown, and the shop is loaded only when the tab is looked at again. Saves
// OUT_DIR/queue-page.png, queue-final.png and queue-turn.png. Kills what it started.
import assert from "node:assert/strict";
import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { harness, step, until } from "./harness.mjs";

const [waitroomd, demoOrigin, outDir] = process.argv.slice(2);
if (!waitroomd || !demoOrigin || !outDir) {
  console.error("usage: node queue_page.test.mjs WAITROOMD DEMO_ORIGIN OUT_DIR");
  process.exit(2);
}
mkdirSync(outDir, { recursive: true });
const h = new harness("queue-page", 120_000);

// Makes the tab look hidden until the test shows it, and records every notification the page
// makes (headless chromium shows none on screen).
function backgroundTab() {
  window.__hidden = true;
  Object.defineProperty(Document.prototype, "visibilityState",
    { configurable: true, get: () => (window.__hidden ? "hidden" : "visible") });
  Object.defineProperty(Document.prototype, "hidden",
    { configurable: true, get: () => !!window.__hidden });
  window.__notes = [];
  const Real = window.Notification;
  function Recorded(title, options) {
    window.__notes.push({ title, body: options && options.body });
    return new Real(title, options);
  }
  Object.defineProperty(Recorded, "permission", { get: () => Real.permission });
  Recorded.requestPermission = (cb) => Real.requestPermission(cb);
  window.Notification = Recorded;
}

let failed = false;
try {
  // One place; 1.5× time: a session of 20 s (product time) ends 13–20 s after its last request
  // (wall time; at 5 s a loaded CI machine took longer than that between A's request and B's,
  // and B was admitted),
  // and a queued browser checking in every few seconds stays well within the abandonment
  // margin. The time scale stays below 2 on purpose: the sync task measures its slot lease
  // (2 × sync_interval) in configured milliseconds against the scaled clock, so from a scale of
  // 2 on the lease lapses between syncs and a visitor may be admitted into a full room (see the
  // disabled integration test Room.DISABLED_NeverAdmitsOverTheLimitAcrossWorkersUnderTimeScale).
  const base = await h.startDaemon(waitroomd, demoOrigin, (file, originPort) => {
    writeFileSync(file, [
      'listen: ["127.0.0.1:0"]',
      `origin: {url: "http://127.0.0.1:${originPort}", connect_timeout: 2s, timeout: 5s}`,
      "threads: 1",
      'admin: {listen: ""}',
      "state: {backend: local, sync_interval: 1s}",
      "testing: {time_scale: 1.5}",
      "rooms:",
      '  - {name: "Demo shop", total_active_users: 1, new_users_per_minute: 100,',
      "     session_duration: 20s, refresh_interval: 20s}",
      "",
    ].join("\n"));
    return file;
  });
  const url = base + "/";
  step("waitroomd is up in front of the demo origin at " + url);
  const browser = await h.launch();
  const errors = [];

  // Visitor A takes the one place, then leaves (its context closes, so it goes idle).
  const a = await browser.newContext();
  const pageA = await a.newPage();
  const resA = await pageA.goto(url);
  assert.equal(resA.status(), 200);
  await pageA.locator("h1", { hasText: "Demo Shop" }).waitFor({ timeout: 5000 });
  assert.ok((await a.cookies()).some((c) => c.name === "_cfwaitingroom"), "A holds the cookie");
  await a.close();
  step("visitor A reaches the origin's page");

  // Visitor B, without JavaScript: the queue page, with its position and wait.
  const b = await browser.newContext({ viewport: { width: 900, height: 900 },
    javaScriptEnabled: false });
  const pageB = await b.newPage();
  let navigations = 0;
  pageB.on("framenavigated", (f) => {
    if (f === pageB.mainFrame()) {
      navigations++;
    }
  });
  // The page may reload itself (Refresh) while it is being read on a loaded machine; hold any
  // reload's request until the reading is done, so that every check reads the first page.
  let holdReloads = false;
  let readingDone;
  const reading = new Promise((resolve) => { readingDone = resolve; });
  await pageB.route("**/*", async (route) => {
    if (holdReloads && route.request().isNavigationRequest()) {
      await reading;
    }
    await route.continue();
  });
  const resB = await pageB.goto(url);
  holdReloads = true;
  assert.equal(resB.status(), 200);
  const headers = resB.headers();
  assert.equal(headers["cache-control"], "no-store");
  assert.match(headers["refresh"] ?? "", /^\d+$/);
  await pageB.locator("h1", { hasText: "You are in line" }).waitFor({ timeout: 2000 });
  const position = (await pageB.locator(".stat", { hasText: "People ahead of you" })
    .locator("dd").textContent()).trim();
  assert.match(position, /^\d+$/, "the position is a number: " + position);
  const queueTitle = await pageB.title();
  assert.equal(queueTitle, `(${position}) You are in line – Demo shop`);
  const wait = (await pageB.locator(".stat", { hasText: "Estimated wait" })
    .locator("dd").textContent()).trim();
  assert.match(wait, /^\d+ minutes?( \d+ seconds)?$|^\d+ seconds$|hour/, "the wait is shown: " + wait);
  assert.equal(await pageB.locator("#notify").isVisible(), false,
    "without a script the page offers no notification it could not give");
  // The screenshot is an artifact, not a check: a reload held above (the page's Refresh came
  // while it was read, on a loaded machine) can keep Chromium from capturing the page (CI: 30 s
  // and a timeout), so it gets 10 s and is skipped if it cannot be taken.
  let queueShot = path.join(outDir, "queue-page.png");
  await pageB.screenshot({ path: queueShot, fullPage: true, timeout: 10_000 }).catch((e) => {
    if (e.name !== "TimeoutError") {
      throw e;
    }
    queueShot = "not taken: " + e.message.split("\n")[0];
  });
  step(`visitor B (no JavaScript) gets the queue page titled "${queueTitle}", ` +
    `wait ${wait}, refresh in ${headers["refresh"]} s (screenshot ${queueShot})`);

  // No goto from here on: every navigation is the page refreshing itself.
  const first = navigations;
  const reloaded = pageB.waitForEvent("framenavigated", {
    predicate: (f) => f === pageB.mainFrame(),
    timeout: 25_000,
  });
  readingDone();
  await reloaded;
  step("without JavaScript the queue page reloads itself through the Refresh header");
  await pageB.locator("h1", { hasText: "Demo Shop" }).waitFor({ timeout: 40_000 });
  assert.match(await pageB.title(), /^Demo Shop$/);
  await pageB.screenshot({ path: path.join(outDir, "queue-final.png"), fullPage: true });
  step(`visitor B lands on the origin's page by itself after ${navigations - first} reload(s)`);
  await b.close();

  // Visitor C, with JavaScript, in a background tab, with notifications allowed. B's session
  // still holds the place, so C is queued.
  const c = await browser.newContext({ viewport: { width: 900, height: 900 },
    permissions: ["notifications"] });
  await c.addInitScript(backgroundTab);
  const pageC = await c.newPage();
  pageC.on("pageerror", (e) => errors.push(String(e)));
  let reloads = 0;
  pageC.on("framenavigated", (f) => {
    if (f === pageC.mainFrame()) {
      reloads++;
    }
  });
  await pageC.goto(url);
  await pageC.locator("h1", { hasText: "You are in line" }).waitFor({ timeout: 2000 });
  assert.match(await pageC.title(), /^\(\d+\) You are in line – Demo shop$/);
  const notify = pageC.locator("#notify");
  await notify.click();
  await until(3000, async () => (await notify.textContent()).includes("You will be notified"),
    "the notify button to confirm");
  assert.equal(await notify.isDisabled(), true);
  step("visitor C (JavaScript, background tab) asks to be notified and the page confirms");

  // The page asks for itself in the background; the tab is never reloaded while queued.
  await until(60_000, () => pageC.evaluate(() => document.title.startsWith("It is your turn")),
    "the hidden tab's title to say it is C's turn");
  assert.equal(await pageC.title(), "It is your turn – Demo shop");
  assert.equal(reloads, 1, "the queued page updated in place, without a reload");
  const notes = await pageC.evaluate(() => window.__notes);
  assert.deepEqual(notes, [{ title: "It is your turn – Demo shop",
    body: "It is your turn: you can go in now." }]);
  assert.equal(await pageC.locator("#alert").textContent(), "It is your turn: you can go in now.");
  assert.equal(await pageC.locator("#turn").isVisible(), true);
  await pageC.screenshot({ path: path.join(outDir, "queue-turn.png"), fullPage: true });
  step("C's turn: the hidden tab's title says so and one notification is shown");

  await pageC.evaluate(() => {
    window.__hidden = false;
    document.dispatchEvent(new Event("visibilitychange"));
  });
  await pageC.locator("h1", { hasText: "Demo Shop" }).waitFor({ timeout: 10_000 });
  step("looking at the tab again takes C into the shop");

  assert.deepEqual(errors, []);
  step("no script errors");
} catch (e) {
  failed = true;
  console.error("not ok - " + (e.stack || e));
} finally {
  await h.finish(failed);
}
