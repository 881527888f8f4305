// Dashboard bars: the compiled binary's cold start to /config, the `/` load event in headless
// chromium (fresh browser context each time, so nothing is cached), and the JS bundle size.
// Each figure is printed beside a ceiling measured in the same run:
//  - cold start: a compiled binary that only answers /config (Bun.serve), started the same way;
//  - load event: a blank same-origin page (`/health`) loaded by the same browser.
// Usage: bun scripts/bench/dashboard.ts [runs=7]
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { launchBrowser } from "../../test/web/browser";
import { bundleDashboard } from "../../src/web/bundle";
import { freePort, ROOT, waitFor } from "./lib";

const runs = Number(process.argv[2] ?? 7);
const dir = mkdtempSync(join(tmpdir(), "mailsvc-dash-bench-"));
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const fmt = (xs: number[]) => `median ${median(xs).toFixed(0)} ms, max ${Math.max(...xs).toFixed(0)} ms`;

function compile(entry: string, out: string) {
  const r = Bun.spawnSync([process.execPath, "build", "--compile", "--minify-whitespace", "--minify-syntax", ...entry.split(" "), "--outfile", out], { cwd: ROOT, env: { ...process.env, MAILSVC_WEB_QUIET: "1" } });
  if (r.exitCode !== 0) throw new Error(r.stderr.toString());
}

async function coldStart(bin: string, args: string[], env: Record<string, string> = {}): Promise<{ ms: number; url: string; stop: () => Promise<void> }> {
  const port = await freePort();
  const t0 = performance.now();
  const proc = Bun.spawn([bin, ...args], {
    cwd: dir,
    env: { ...process.env, MAILSVC_PORT: String(port), MAILSVC_HOST: "127.0.0.1", MAILSVC_DB: join(dir, `db-${port}.db`), PORT: String(port), MAILSVC_LOG_REQUESTS: "false", ...env },
    stdout: "ignore",
    stderr: "ignore",
  });
  const url = `http://127.0.0.1:${port}`;
  for (;;) {
    try {
      if ((await fetch(url + "/config")).ok) break;
    } catch {}
    await Bun.sleep(2);
  }
  const ms = performance.now() - t0;
  return { ms, url, stop: async () => { proc.kill("SIGTERM"); await proc.exited; } };
}

const bundle = bundleDashboard();
const jsGz = bundle.jsGzipBytes / 1024;

console.log("building the binary and a bare Bun.serve binary …");
const bin = join(dir, "mailsvc");
compile("src/main.ts src/mail/message/build-worker.ts", bin);
const bareSrc = join(dir, "bare.ts");
writeFileSync(bareSrc, `Bun.serve({ hostname: "127.0.0.1", port: Number(process.env.PORT), fetch: () => Response.json({ ok: true }) });`);
const bare = join(dir, "bare");
compile(bareSrc, bare);

const starts: number[] = [];
const bareStarts: number[] = [];
for (let i = 0; i < runs; i++) {
  const a = await coldStart(bin, ["serve"]);
  starts.push(a.ms);
  await a.stop();
  const b = await coldStart(bare, []);
  bareStarts.push(b.ms);
  await b.stop();
}

const server = await coldStart(bin, ["serve"]);
await waitFor(server.url + "/");
const browser = await launchBrowser();
const loads: number[] = [];
const blanks: number[] = [];
const loadOf = async (path: string) => {
  const ctx = await browser.newContext();
  const page = await ctx.newPage();
  await page.goto(server.url + path, { waitUntil: "load" });
  const ms = await page.evaluate(() => {
    const n = performance.getEntriesByType("navigation")[0] as PerformanceNavigationTiming;
    return n.loadEventEnd - n.startTime;
  });
  await ctx.close();
  return ms;
};
await loadOf("/"); // the browser's own first-page warm-up
for (let i = 0; i < runs; i++) {
  loads.push(await loadOf("/"));
  blanks.push(await loadOf("/health"));
}
await browser.close();
await server.stop();
rmSync(dir, { recursive: true, force: true });

console.log(`cold start to /config (compiled binary): ${fmt(starts)}   | ceiling, bare Bun.serve binary: ${fmt(bareStarts)}   (bar: < 300 ms)`);
console.log(`'/' load event, fresh context:           ${fmt(loads)}   | ceiling, blank page same server: ${fmt(blanks)}   (bar: < 1000 ms)`);
console.log(`JS bundle: ${jsGz.toFixed(1)} KB gzipped in all (bar: < 500 KB)`);
