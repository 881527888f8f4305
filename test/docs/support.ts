// The documentation's shell snippets: extracted from README.md and docs/*.md in document order, run in one
// bash session per document against the built binary, the way a reader pastes them.
//
// Conventions (the README's "More" list points here):
// - Every ```sh block is run. An illustrative one that cannot run here (real DNS, the server's real name,
//   pg_dump, a PostgreSQL server, the whole test suite, a server in the foreground) is preceded by
//   `<!-- not run: <reason> -->` and is listed as skipped with that reason. ```console blocks are never run.
// - `# expect: <jq expression>` after a command: the last JSON value printed since the previous check (or since
//   the block's start) must make the expression true (jq -e: not false, not null).
//   `# expect-text: <text>`: that output contains the text.
// - Whatever a block prints must not hold an error envelope (`"success": false`): an example that quietly
//   answers an error fails too.
// - `http://localhost:3000` in a snippet is the test server's address.

import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";

export const ROOT = join(import.meta.dir, "../..");
export const BINARY = join(ROOT, "mailsvc");

export interface Expectation {
  kind: "json" | "text";
  value: string;
}

export interface Snippet {
  doc: string; // path relative to the repository
  index: number; // 1-based among the document's sh blocks
  line: number; // 1-based line of the opening fence
  code: string;
  skip: string | null; // the reason when marked not run
  /** One group of expectations per check point, in order. */
  checks: Expectation[][];
}

/** README.md, then docs/*.md in name order. */
export function documents(): string[] {
  const docs = readdirSync(join(ROOT, "docs"))
    .filter((f) => f.endsWith(".md"))
    .sort()
    .map((f) => `docs/${f}`);
  return ["README.md", ...docs];
}

const NOT_RUN = /<!--\s*not run:\s*([\s\S]*?)\s*-->/;

export function extractSnippets(doc: string): Snippet[] {
  const lines = readFileSync(join(ROOT, doc), "utf8").split("\n");
  const out: Snippet[] = [];
  let lastNonBlank = "";
  for (let i = 0; i < lines.length; i++) {
    const open = /^(\s*)```(\S*)\s*$/.exec(lines[i]!);
    if (!open) {
      if (lines[i]!.trim()) lastNonBlank = lines[i]!.trim();
      continue;
    }
    const indent = open[1]!.length;
    const lang = open[2]!;
    const start = i;
    const body: string[] = [];
    for (i++; i < lines.length && !/^\s*```\s*$/.test(lines[i]!); i++) body.push(lines[i]!.slice(Math.min(indent, lines[i]!.length - lines[i]!.trimStart().length)));
    if (lang === "sh") {
      const skip = NOT_RUN.exec(lastNonBlank)?.[1] ?? null;
      out.push({ doc, index: out.length + 1, line: start + 1, code: body.join("\n"), skip, checks: parseChecks(body) });
    }
    lastNonBlank = "";
  }
  return out;
}

function parseChecks(body: string[]): Expectation[][] {
  const groups: Expectation[][] = [];
  let open = false;
  for (const l of body) {
    const m = /^\s*#\s*expect(-text)?:\s*(.*)$/.exec(l);
    if (m) {
      if (!open) groups.push([]);
      groups[groups.length - 1]!.push({ kind: m[1] ? "text" : "json", value: m[2]!.trim() });
      open = true;
    } else open = false;
  }
  return groups;
}

/**
 * The bash script of one document: each runnable block sourced in turn in the one shell (its variables carry
 * over), each check point replaced by a marker line the test splits the output on.
 */
export function sessionScript(snippets: Snippet[], port: number): string {
  const parts = ["set -e"];
  for (const s of snippets) {
    if (s.skip) continue;
    let k = 0;
    let open = false;
    const code = s.code
      .replaceAll("http://localhost:3000", `http://localhost:${port}`)
      .split("\n")
      .map((l) => {
        if (/^\s*#\s*expect(-text)?:/.test(l)) {
          if (open) return "";
          open = true;
          return `printf '\n@@CHECK ${s.index} ${k++}@@\n'`;
        }
        open = false;
        return l;
      })
      .join("\n");
    parts.push(`printf '\n@@START ${s.index}@@\n'`, code, `printf '\n@@END ${s.index}@@\n'`);
  }
  return parts.join("\n") + "\n";
}

/** The output between markers: per block, the text before each check point. */
export function splitOutput(stdout: string): { started: Set<number>; ended: Set<number>; segments: Map<string, string>; whole: Map<number, string> } {
  const started = new Set<number>();
  const ended = new Set<number>();
  const segments = new Map<string, string>();
  const whole = new Map<number, string>();
  let buf: string[] = [];
  let current = 0;
  for (const line of stdout.split("\n")) {
    const m = /^@@(START|END|CHECK) (\d+)(?: (\d+))?@@$/.exec(line);
    if (!m) {
      buf.push(line);
      if (current) whole.set(current, (whole.get(current) ?? "") + line + "\n");
      continue;
    }
    const n = Number(m[2]);
    if (m[1] === "START") {
      started.add(n);
      current = n;
    }
    else if (m[1] === "END") ended.add(n);
    else segments.set(`${n}:${m[3]}`, buf.join("\n"));
    buf = [];
  }
  return { started, ended, segments, whole };
}

/** The last JSON value of a stream of JSON values (what `jq` would print last), or null. */
export function checkJson(segment: string, expr: string): { ok: boolean; detail: string } {
  const r = Bun.spawnSync(["jq", "-e", "-s", `if length == 0 then error("no JSON printed") else last | (${expr}) end`], {
    stdin: Buffer.from(segment),
    stdout: "pipe",
    stderr: "pipe",
  });
  return { ok: r.exitCode === 0, detail: (r.stdout.toString() + r.stderr.toString()).trim() };
}

/** Newest modification time under the sources the binary is built from. */
function newestSource(): number {
  let newest = 0;
  const walk = (p: string) => {
    const st = statSync(p);
    if (st.isDirectory()) for (const f of readdirSync(p)) walk(join(p, f));
    else newest = Math.max(newest, st.mtimeMs);
  };
  for (const p of ["src", "migrations", "package.json", "package-lock.json"]) if (existsSync(join(ROOT, p))) walk(join(ROOT, p));
  return newest;
}

/** `./mailsvc` as `npm run build` makes it: built here when missing or older than its sources. */
export function ensureBinary(): string {
  if (existsSync(BINARY) && statSync(BINARY).mtimeMs >= newestSource()) return BINARY;
  const r = Bun.spawnSync(["npm", "run", "build"], { cwd: ROOT, stdout: "pipe", stderr: "pipe" });
  if (r.exitCode !== 0) throw new Error(`npm run build failed:\n${r.stdout}\n${r.stderr}`);
  return BINARY;
}
