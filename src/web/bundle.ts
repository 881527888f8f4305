/**
 * A Bun macro: bundles the dashboard (src/web/app) with `bun build` when the file that imports it is
 * transpiled, i.e. once at `bun build --compile` time (the result is inlined into the binary) and
 * once per process when running from source. Bun.build cannot run inside a macro, so it spawns the CLI.
 * Prints the bundle's sizes (the bar: JS under 500 KB gzipped).
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

export interface BuiltAsset {
  name: string;
  type: string;
  /** base64 of the bytes (macros return JSON-serialisable values). */
  base64: string;
}

export interface DashboardBundle {
  files: BuiltAsset[];
  entryJs: string;
  entryCss: string | null;
  jsGzipBytes: number;
}

const TYPES: Record<string, string> = {
  js: "text/javascript; charset=utf-8",
  css: "text/css; charset=utf-8",
  svg: "image/svg+xml",
  png: "image/png",
  woff2: "font/woff2",
};

export function bundleDashboard(): DashboardBundle {
  const out = mkdtempSync(join(tmpdir(), "mailsvc-web-"));
  try {
    const r = Bun.spawnSync(
      [
        process.execPath,
        "build",
        join(import.meta.dir, "app/main.tsx"),
        "--minify",
        "--splitting",
        "--target=browser",
        "--define",
        'process.env.NODE_ENV="production"',
        "--entry-naming",
        "[name]-[hash].[ext]",
        "--chunk-naming",
        "chunk-[hash].[ext]",
        "--asset-naming",
        "[name]-[hash].[ext]",
        "--outdir",
        out,
      ],
      { env: { ...process.env, NODE_ENV: "production" } },
    );
    if (r.exitCode !== 0) throw new Error(`dashboard build failed:\n${r.stderr.toString()}${r.stdout.toString()}`);
    const files: BuiltAsset[] = [];
    let entryJs = "";
    let entryCss: string | null = null;
    let jsGzipBytes = 0;
    let jsBytes = 0;
    let entryGzipBytes = 0;
    for (const name of readdirSync(out)) {
      const bytes = readFileSync(join(out, name));
      const ext = name.split(".").pop() ?? "";
      files.push({ name, type: TYPES[ext] ?? "application/octet-stream", base64: bytes.toString("base64") });
      if (ext === "js") {
        jsBytes += bytes.length;
        jsGzipBytes += Bun.gzipSync(bytes).length;
        if (name.startsWith("main-")) {
          entryJs = name;
          entryGzipBytes = Bun.gzipSync(bytes).length;
        }
      }
      if (ext === "css" && name.startsWith("main-")) entryCss = name;
    }
    if (!entryJs) throw new Error("dashboard build produced no main-*.js");
    if (process.env.MAILSVC_WEB_QUIET !== "1") {
      console.error(
        `dashboard bundle: JS ${(jsBytes / 1024).toFixed(0)} KB, ${(jsGzipBytes / 1024).toFixed(1)} KB gzipped in all (bar: 500 KB gzipped); ` +
          `first load ${(entryGzipBytes / 1024).toFixed(1)} KB gzipped, the rest loads with the pages that need it`,
      );
    }
    return { files, entryJs, entryCss, jsGzipBytes };
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
}
