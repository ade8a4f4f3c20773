// What the queue-page browser tests share: a watchdog, free ports, child processes started and
// killed, and Debian's chromium launched headless.
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { chromium } from "playwright-core";

export const step = (name) => console.log("ok - " + name);

export class harness {
  constructor(name, deadlineMs) {
    this.children = [];
    this.workDir = mkdtempSync(path.join(os.tmpdir(), "waitroom-" + name + "-"));
    this.browser = null;
    // The whole test has one deadline; past it everything started is killed and the test fails.
    this.watchdog = setTimeout(() => {
      console.error("not ok - the test did not finish within " + deadlineMs / 1000 + " s");
      this.killAll();
      process.exit(1);
    }, deadlineMs);
  }

  killAll() {
    for (const c of this.children) {
      if (c.exitCode === null && c.signalCode === null) {
        c.kill("SIGKILL");
      }
    }
    rmSync(this.workDir, { recursive: true, force: true });
  }

  freePort() {
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
  startProcess(program, args, pattern, what) {
    const child = spawn(program, args, { stdio: ["ignore", "pipe", "pipe"] });
    this.children.push(child);
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

  // The demo origin and waitroomd in front of it, with `config(originPort)` as its file; resolves
  // with the base URL of its first listener (https:// when that listener terminates TLS).
  async startDaemon(waitroomd, demoOrigin, writeConfig) {
    const originPort = await this.freePort();
    await this.startProcess(demoOrigin, ["--listen", `127.0.0.1:${originPort}`], /listening on/,
      "the demo origin");
    const config = writeConfig(path.join(this.workDir, "config.yaml"), originPort);
    const m = await this.startProcess(waitroomd, ["-c", config],
      /listening on (https?):\/\/[^\s:]+:(\d+)/, "waitroomd");
    return `${m[1]}://127.0.0.1:${m[2]}`;
  }

  // Chromium headless, with `extraArgs` after the flags every browser test uses.
  async launch(extraArgs = []) {
    this.browser = await chromium.launch({
      executablePath: "/usr/bin/chromium",
      args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-dev-shm-usage", ...extraArgs],
    });
    return this.browser;
  }

  async finish(failed) {
    if (this.browser) {
      await this.browser.close().catch(() => {});
    }
    clearTimeout(this.watchdog);
    this.killAll();
    process.exitCode = failed ? 1 : 0;
  }
}

// Polls `check` (async, truthy when done) every 100 ms of real time until `ms` have passed.
export async function until(ms, check, what) {
  const end = Date.now() + ms;
  for (;;) {
    const v = await check();
    if (v) {
      return v;
    }
    if (Date.now() > end) {
      throw new Error("timed out waiting for " + what);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}
