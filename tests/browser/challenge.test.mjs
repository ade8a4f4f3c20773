// Browser test of proof of work on joining (rooms[].challenge, CTest label `browser`): Debian's
// chromium against a real waitroomd in front of the demo origin, with a room of one place.
//   node tests/browser/challenge.test.mjs WAITROOMD DEMO_ORIGIN
// A takes the place. B, without JavaScript, gets the challenge page (the same page for every
// visitor, compressed; its seed, the end of B's own cookie, in the cookie the page names) and a
// note that joining needs JavaScript, and is in nobody's way. C, with
// JavaScript, arrives after B: the page solves the puzzle through Web Crypto, joins the line with
// nobody ahead (B never joined), and gets in when A's session ends. D's page has no Web Crypto
// (as on a plain-http site): it solves the puzzle with the script's own SHA-256 and joins.
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { harness, step, until } from "./harness.mjs";

const [waitroomd, demoOrigin] = process.argv.slice(2);
if (!waitroomd || !demoOrigin) {
  console.error("usage: node challenge.test.mjs WAITROOMD DEMO_ORIGIN");
  process.exit(2);
}
const h = new harness("challenge", 120_000);
const DIFFICULTY = 12;

// The queue page's main element as the test sees it.
async function pageState(page) {
  return page.evaluate(() => {
    const main = document.getElementById("queue");
    const ahead = [...document.querySelectorAll("#status .stat")]
      .find((s) => s.textContent.includes("People ahead of you"));
    return {
      challenge: main ? main.dataset.challenge || "" : null,
      difficulty: main ? main.dataset.difficulty || "" : null,
      challengeNote: !!document.getElementById("challenge"),
      ahead: ahead ? ahead.querySelector("dd").textContent.trim() : null,
      h1: (document.querySelector("h1") || {}).textContent || "",
    };
  });
}

const cookieOf = async (ctx, name = "_cfwaitingroom") =>
  ((await ctx.cookies()).find((c) => c.name === name) || {}).value || "";

let failed = false;
try {
  // 1.5× time, as the queue page's own test (see there why not more).
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
      // A's place must still be held when B and C come, and C's when D comes: at 5 s, beside
      // another Chromium test on a loaded machine, A's session had ended and C got straight in.
      "     session_duration: 20s, refresh_interval: 20s,",
      `     challenge: {enabled: true, min_difficulty: ${DIFFICULTY}, max_difficulty: ${DIFFICULTY}}}`,
      "",
    ].join("\n"));
    return file;
  });
  const url = base + "/";
  const browser = await h.launch();
  const errors = [];

  const a = await browser.newContext();
  const pageA = await a.newPage();
  await pageA.goto(url);
  await pageA.locator("h1", { hasText: "Demo Shop" }).waitFor({ timeout: 5000 });
  await a.close();
  step("visitor A takes the one place and leaves");

  const b = await browser.newContext({ javaScriptEnabled: false });
  const pageB = await b.newPage();
  const resB = await pageB.goto(url);
  assert.equal(resB.status(), 200);
  const sb = await pageState(pageB);
  const cookieB = await cookieOf(b);
  assert.equal(sb.challenge, "waitroom_seed", "the page names the cookie of its seed");
  assert.equal(await cookieOf(b, "waitroom_seed"), cookieB.slice(-22),
    "the seed is the end of B's cookie");
  assert.ok(!(await pageB.content()).includes(cookieB.slice(-22)), "the page holds no seed");
  assert.match(resB.headers()["content-encoding"] || "", /^(gzip|br)$/,
    "the page comes compressed");
  assert.equal(resB.headers()["vary"], "Accept-Encoding");
  assert.equal(sb.difficulty, String(DIFFICULTY));
  assert.ok(sb.challengeNote, "the page says the browser is being checked");
  // (Playwright turns script execution off, not the parser's scripting flag, so the noscript
  // element is kept as text here: its markup is checked, not its rendering.)
  assert.match(await pageB.content(),
    /<noscript><p class="note">To join the line, your browser must run JavaScript\.<\/p><\/noscript>/,
    "without JavaScript the page says why the visitor cannot join");
  step("visitor B (no JavaScript) gets the challenge page, compressed, its seed in a cookie");

  const c = await browser.newContext();
  const pageC = await c.newPage();
  pageC.on("pageerror", (e) => errors.push(String(e)));
  const solutions = [];
  pageC.on("request", (r) => {
    const s = r.headers()["waitroom-solution"];
    if (s) { solutions.push(s); }
  });
  const t0 = Date.now();
  const resC = await pageC.goto(url);
  // The challenge's cookie, as set with the page (the script may have replaced it already).
  const cookieC = /_cfwaitingroom=([^;]+)/.exec((await resC.allHeaders())["set-cookie"] || "");
  assert.ok(cookieC, "the challenge page sets C's cookie");
  // Loading the page and solving 12 bits take about a second; the bound is for a loaded machine.
  await until(45_000, async () => {
    const s = await pageState(pageC).catch(() => null);
    return s && s.challenge === "" && s.h1.includes("You are in line");
  }, "C's page to solve the challenge and join the line");
  const solveMs = Date.now() - t0;
  assert.equal(solutions.length, 1, "one solution sent");
  const sc = await pageState(pageC);
  assert.equal(sc.challengeNote, false);
  assert.equal(sc.ahead, "0", "B never joined, so nobody is ahead of C");
  assert.notEqual(await cookieOf(c), cookieC[1], "joining set a new cookie");
  assert.equal(await cookieOf(c, "waitroom_seed"), "", "the script dropped the seed's cookie");
  step(`visitor C (JavaScript) solved ${DIFFICULTY} bits with Web Crypto and joined in ` +
    `${solveMs} ms, with nobody ahead`);

  await until(60_000, async () => (await pageC.title().catch(() => "")) === "Demo Shop",
    "C to get in once A's session ends");
  step("C gets in when the place frees");

  const d = await browser.newContext();
  await d.addInitScript(() => {
    Object.defineProperty(window.crypto, "subtle", { configurable: true, get: () => undefined });
  });
  const pageD = await d.newPage();
  pageD.on("pageerror", (e) => errors.push(String(e)));
  await pageD.goto(url);
  await until(20_000, async () => {
    const s = await pageState(pageD).catch(() => null);
    return s && s.challenge === "" && s.h1.includes("You are in line");
  }, "D's page to solve the challenge without Web Crypto and join");
  step("visitor D, without Web Crypto, solves with the script's SHA-256 and joins");

  assert.deepEqual(errors, []);
  step("no script errors");
} catch (e) {
  failed = true;
  console.error("not ok - " + (e.stack || e));
} finally {
  await h.finish(failed);
}
