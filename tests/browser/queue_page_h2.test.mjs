// Browser test of the queue page over HTTP/2 (CTest label `browser`): Debian's chromium, driven by
// playwright-core, against waitroomd with a TLS listener (a self-signed certificate made here,
// ALPN h2) in front of the demo origin, with a room of two places.
//   node tests/browser/queue_page_h2.test.mjs WAITROOMD DEMO_ORIGIN
// Visitors A1 and A2 take both places and reach the shop. Visitor B, without JavaScript, and
// visitor C, with it, get the queue page; every page is asserted to have come over h2. Once the
// A sessions end, B's page reloads itself (Refresh header) and C's script checks in (the
// gateway's 204 and cookie, then the page load) until both land on the shop, still over h2,
// without the test touching either page. Kills what it started.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import path from "node:path";
import { harness, step } from "./harness.mjs";

const [waitroomd, demoOrigin] = process.argv.slice(2);
if (!waitroomd || !demoOrigin) {
  console.error("usage: node queue_page_h2.test.mjs WAITROOMD DEMO_ORIGIN");
  process.exit(2);
}
const h = new harness("queue-page-h2", 75_000);

// A self-signed certificate for 127.0.0.1 in the test's own directory.
function selfSignedCertificate(dir) {
  const cert = path.join(dir, "cert.pem");
  const key = path.join(dir, "key.pem");
  execFileSync("openssl", ["req", "-x509", "-newkey", "ec", "-pkeyopt",
    "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", key, "-out", cert, "-days", "1",
    "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"], { stdio: "pipe" });
  return { cert, key };
}

// The protocol the document in `page` was loaded with, as the browser saw it.
const protocolOf = (page) => page.evaluate(() => performance.getEntries()[0].nextHopProtocol);

// Counts the main frame's navigations of `page` (its first load included).
function countNavigations(page) {
  const counter = { n: 0 };
  page.on("framenavigated", (f) => {
    if (f === page.mainFrame()) {
      counter.n++;
    }
  });
  return counter;
}

// Opens `url` in a new context of `browser`; asserts the shop's page came over h2 with a Secure
// cookie.
async function admittedVisitor(browser, url, name) {
  const context = await browser.newContext();
  const page = await context.newPage();
  const res = await page.goto(url);
  assert.equal(res.status(), 200);
  await page.locator("h1", { hasText: "Demo Shop" }).waitFor({ timeout: 5000 });
  assert.equal(await protocolOf(page), "h2", name + "'s page came over HTTP/2");
  const cookie = (await context.cookies()).find((c) => c.name === "_cfwaitingroom");
  assert.ok(cookie, name + " holds the cookie");
  assert.equal(cookie.secure, true, "a cookie set over TLS is Secure");
  return context;
}

// Opens `url` in a new context with `options`; asserts the queue page came over h2.
async function queuedVisitor(browser, url, options, name) {
  const context = await browser.newContext(options);
  const page = await context.newPage();
  const navigations = countNavigations(page);
  const res = await page.goto(url);
  assert.equal(res.status(), 200);
  assert.equal(res.headers()["cache-control"], "no-store");
  await page.locator("h1", { hasText: "You are in line" }).waitFor({ timeout: 2000 });
  assert.equal(await protocolOf(page), "h2", name + "'s queue page came over HTTP/2");
  return { context, page, navigations };
}

let failed = false;
try {
  const tls = selfSignedCertificate(h.workDir);
  // Two places; sessions of 20 s (product time) at 1.5× time end 13–20 s after their last
  // request, as in the HTTP/1.1 queue page test (which says why the scale stays below 2).
  const base = await h.startDaemon(waitroomd, demoOrigin, (file, originPort) => {
    writeFileSync(file, [
      `listen: [{address: "127.0.0.1:0", tls: {cert: "${tls.cert}", key: "${tls.key}"}}]`,
      `origin: {url: "http://127.0.0.1:${originPort}", connect_timeout: 2s, timeout: 5s}`,
      "threads: 1",
      'admin: {listen: ""}',
      "state: {backend: local, sync_interval: 1s}",
      "testing: {time_scale: 1.5}",
      "rooms:",
      '  - {name: "Demo shop", total_active_users: 2, new_users_per_minute: 100,',
      "     session_duration: 20s, refresh_interval: 20s}",
      "",
    ].join("\n"));
    return file;
  });
  assert.match(base, /^https:\/\//, "the listener terminates TLS");
  const url = base + "/";
  step("waitroomd is up with a TLS listener in front of the demo origin at " + url);
  const browser = await h.launch(["--ignore-certificate-errors"]);

  // A1 and A2 take both places, then leave (their contexts close, so they go idle).
  for (const name of ["A1", "A2"]) {
    await (await admittedVisitor(browser, url, name)).close();
  }
  step("visitors A1 and A2 reach the origin's page over h2, with a Secure cookie");

  const b = await queuedVisitor(browser, url, { javaScriptEnabled: false }, "B");
  const c = await queuedVisitor(browser, url, {}, "C");
  const errors = [];
  c.page.on("pageerror", (e) => errors.push(String(e)));
  step("visitors B (no JavaScript) and C (JavaScript) get the queue page over h2");

  // No goto from here on: B's page reloads itself and C's script checks in, until each is let in.
  for (const [name, v] of [["B", b], ["C", c]]) {
    await v.page.locator("h1", { hasText: "Demo Shop" }).waitFor({ timeout: 40_000 });
    assert.equal(await protocolOf(v.page), "h2", name + "'s shop page came over HTTP/2");
  }
  assert.ok(b.navigations.n > 1, "B's page reloaded itself: " + b.navigations.n + " loads");
  assert.equal(c.navigations.n, 2, "C's page was loaded once more, on its turn, not reloaded");
  assert.deepEqual(errors, []);
  step(`B lands on the origin's page over h2 after ${b.navigations.n - 1} reload(s), ` +
    "C after its script's check-in, without script errors");
} catch (e) {
  failed = true;
  console.error("not ok - " + (e.stack || e));
} finally {
  await h.finish(failed);
}
