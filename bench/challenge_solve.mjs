// Median time the built-in queue page takes to solve a challenge (rooms[].challenge), per
// difficulty, in Debian's headless chromium against a real waitroomd: from the page's load to
// the request that carries its solution. Web Crypto (the page on 127.0.0.1 is a secure context)
// and the script's own SHA-256 (Web Crypto hidden, as on a plain-http site) side by side.
//   node bench/challenge_solve.mjs WAITROOMD DEMO_ORIGIN [LEVELS] [TRIALS]
//   e.g. node bench/challenge_solve.mjs build/src/waitroomd build/tests/support/waitroom-demo-origin "10 14 18" 9
// Needs the browser tests' npm packages (tests/browser/install.sh).
import { writeFileSync } from "node:fs";
import { harness } from "../tests/browser/harness.mjs";

const [waitroomd, demoOrigin, levelsArg, trialsArg] = process.argv.slice(2);
if (!waitroomd || !demoOrigin) {
  console.error("usage: node bench/challenge_solve.mjs WAITROOMD DEMO_ORIGIN [LEVELS] [TRIALS]");
  process.exit(2);
}
const levels = (levelsArg || "10 12 14 16 18").split(/\s+/).filter(Boolean).map(Number);
const trials = Number(trialsArg || 7);
const h = new harness("challenge-solve", 3_600_000);
const median = (xs) => { const s = [...xs].sort((a, b) => a - b); return s[s.length >> 1]; };

// One page load: ms from navigation to the request carrying Waitroom-Solution.
async function solveOnce(browser, url, withWebCrypto) {
  const ctx = await browser.newContext();
  if (!withWebCrypto) {
    await ctx.addInitScript(() => {
      Object.defineProperty(window.crypto, "subtle", { configurable: true, get: () => undefined });
    });
  }
  const page = await ctx.newPage();
  const sent = new Promise((resolve) => page.on("request", (r) => {
    if (r.headers()["waitroom-solution"]) { resolve(Date.now()); }
  }));
  const t0 = Date.now();
  await page.goto(url);
  const t1 = await sent;
  await ctx.close();
  return t1 - t0;
}

let failed = false;
try {
  const browser = await h.launch();
  console.log("| bits | expected hashes | Web Crypto median (ms) | script SHA-256 median (ms) |");
  console.log("|---|---|---|---|");
  for (const bits of levels) {
    const base = await h.startDaemon(waitroomd, demoOrigin, (file, originPort) => {
      writeFileSync(file, [
        'listen: ["127.0.0.1:0"]',
        `origin: {url: "http://127.0.0.1:${originPort}"}`,
        "threads: 1", 'admin: {listen: ""}',
        "rooms:",
        '  - {name: "Bench", total_active_users: 1, new_users_per_minute: 1000,',
        "     session_duration: 1h, refresh_interval: 20s,",
        `     challenge: {enabled: true, min_difficulty: ${bits}, max_difficulty: ${bits}}}`,
        "",
      ].join("\n"));
      return file;
    });
    await fetch(base + "/");  // takes the one place for the hour: every page after is challenged
    const web = [], plain = [];
    for (let i = 0; i < trials; i++) {
      web.push(await solveOnce(browser, base + "/", true));
      plain.push(await solveOnce(browser, base + "/", false));
    }
    console.log(`| ${bits} | ${2 ** bits} | ${median(web)} | ${median(plain)} |`);
    for (const c of h.children) { c.kill("SIGKILL"); }
    h.children = [];
  }
} catch (e) {
  failed = true;
  console.error(e.stack || e);
} finally {
  await h.finish(failed);
}
