// Accessibility of the built-in queue page (CTest label `browser`), in every built-in language:
// axe-core finds no violation (WCAG 2.x A and AA, colour contrast included) in the light and the
// dark scheme, the countdown bar stands still under prefers-reduced-motion, and the live region
// says a changed position at most once a minute, with the newest values.
//   node tests/browser/queue_page_a11y.test.mjs WAITROOMD DEMO_ORIGIN
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { harness, step, until } from "./harness.mjs";

const [waitroomd, demoOrigin] = process.argv.slice(2);
if (!waitroomd || !demoOrigin) {
  console.error("usage: node queue_page_a11y.test.mjs WAITROOMD DEMO_ORIGIN");
  process.exit(2);
}
const axePath = createRequire(import.meta.url).resolve("axe-core/axe.min.js");
const LANGUAGES = ["en-US", "de-DE", "fr-FR", "ja-JP"];
const h = new harness("queue-a11y", 110_000);

async function axe(page) {
  await page.addScriptTag({ path: axePath });
  return page.evaluate(async () => {
    const r = await window.axe.run(document, {
      runOnly: { type: "tag", values: ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "best-practice"] },
    });
    return r.violations.map((v) => v.id + ": " + v.nodes.map((n) => n.target.join(" ")).join(", "));
  });
}

let failed = false;
try {
  // Every room queues everyone: each visitor stays on the queue page.
  const base = await h.startDaemon(waitroomd, demoOrigin, (file, originPort) => {
    const rooms = LANGUAGES.map((lang) =>
      `  - {name: "Shop ${lang}", path: /${lang}, default_template_language: ${lang}, ` +
      "total_active_users: 1, new_users_per_minute: 1, queue_all: true, refresh_interval: 20s}");
    // The same page while it asks a proof of work: hard enough to stay unsolved during the test.
    rooms.push(...LANGUAGES.map((lang) =>
      `  - {name: "Pow ${lang}", path: /${lang}-pow, default_template_language: ${lang}, ` +
      "total_active_users: 1, new_users_per_minute: 1, queue_all: true, refresh_interval: 20s, " +
      "challenge: {enabled: true, min_difficulty: 24, max_difficulty: 24}}"));
    writeFileSync(file, [
      'listen: ["127.0.0.1:0"]',
      `origin: {url: "http://127.0.0.1:${originPort}", connect_timeout: 2s, timeout: 5s}`,
      "threads: 1",
      'admin: {listen: ""}',
      "rooms:", ...rooms, "",
    ].join("\n"));
    return file;
  });
  const browser = await h.launch();

  for (const lang of LANGUAGES) {
    for (const colorScheme of ["light", "dark"]) {
      const ctx = await browser.newContext({ colorScheme, reducedMotion: "reduce" });
      const page = await ctx.newPage();
      await page.goto(`${base}/${lang}/`);
      await page.locator("#queue").waitFor({ timeout: 5000 });
      assert.equal(await page.getAttribute("html", "lang"), lang);
      // The notification button is part of what is checked: shown once the script runs.
      await page.locator("#notify").waitFor({ state: "visible", timeout: 5000 });
      assert.deepEqual(await axe(page), [], `${lang} ${colorScheme}`);
      // The turn box too, as it will be shown.
      await page.evaluate(() => { document.getElementById("turn").hidden = false; });
      assert.deepEqual(await axe(page), [], `${lang} ${colorScheme}, turn shown`);
      const animation = await page.evaluate(
        () => getComputedStyle(document.querySelector(".countdown-bar")).animationName);
      assert.equal(animation, "none", "the countdown bar stands still under reduced motion");
      await ctx.close();
    }
    step(`${lang}: axe-core finds no violation, light and dark; no motion when reduced`);
    for (const colorScheme of ["light", "dark"]) {
      const ctx = await browser.newContext({ colorScheme });
      const page = await ctx.newPage();
      await page.goto(`${base}/${lang}-pow/`);
      await page.locator("#challenge").waitFor({ timeout: 5000 });
      assert.deepEqual(await axe(page), [], `${lang} ${colorScheme}, challenge`);
      await ctx.close();
    }
    step(`${lang}: the page of a challenge has no violation either`);
  }

  // With motion allowed, the bar drains.
  {
    const ctx = await browser.newContext();
    const page = await ctx.newPage();
    await page.goto(`${base}/en-US/`);
    assert.equal(await page.evaluate(
      () => getComputedStyle(document.querySelector(".countdown-bar")).animationName), "drain");
    await ctx.close();
  }

  // The live region, under a clock the test moves. Each check-in's answer gets the position the
  // test sets, so the values change at every check-in.
  const ctx = await browser.newContext();
  const page = await ctx.newPage();
  let position = 9;
  let checkIns = 0;
  await page.route(`${base}/en-US/`, async (route) => {
    const res = await route.fetch();
    let body = await res.text();
    if (route.request().resourceType() === "fetch") {
      checkIns++;
    }
    body = body.replace(/<dd>\d+<\/dd>/, `<dd>${position}</dd>`)
      .replace(/<title>\(\d+\) /, `<title>(${position}) `);
    await route.fulfill({ response: res, body });
  });
  await page.clock.install();
  await page.goto(`${base}/en-US/`);
  await page.locator("#queue").waitFor({ timeout: 5000 });
  const loadedAt = await page.evaluate(() => Date.now());
  const sinceLoad = async () => (await page.evaluate(() => Date.now())) - loadedAt;
  const announced = () => page.locator("#announce").textContent();
  // Runs the page's clock to its next check-in and waits for that check-in's values.
  const checkIn = async (pos) => {
    // A check-in the clock already started ends first (its countdown then starts again).
    const seconds = () => page.locator("#countdown").textContent().then(Number);
    await until(5000, async () => (await seconds()) > 0, "the countdown to start again");
    position = pos;
    const before = checkIns;
    const left = await seconds();
    await page.clock.runFor(left * 1000);
    await until(5000, async () => checkIns > before &&
      (await page.locator(".stat dd").first().textContent()) === String(pos), "a check-in");
  };
  await checkIn(8);
  assert.equal(await page.title(), "(8) You are in line – Shop en-US");
  assert.equal(await announced(), "", "a change within a minute of the page's load waits");
  // More changes while the minute lasts, the last one well before its end.
  const left = async () => Number(await page.locator("#countdown").textContent()) * 1000;
  while ((await sinceLoad()) + 2 * (await left()) < 59_000) {
    await checkIn(7);
  }
  assert.equal(await announced(), "", "still within the minute");
  await checkIn(6);
  await page.clock.runFor(Math.max(0, 60_000 - (await sinceLoad())) + 1000);
  const said = await until(3000, announced, "the announcement");
  assert.match(said, /^People ahead of you: 6\. Estimated wait: .+\.$/);
  step(`the live region says "${said}" once, a minute after the page's load, with the newest values`);
  await checkIn(5);
  assert.equal(await announced(), said, "the next change waits for the next minute");
  await page.clock.runFor(60_000);
  await until(3000, async () => (await announced()).startsWith("People ahead of you: 5."),
    "the next announcement");
  step("the next change is said a minute after the last announcement");
  await ctx.close();
} catch (e) {
  failed = true;
  console.error("not ok - " + (e.stack || e));
} finally {
  await h.finish(failed);
}
