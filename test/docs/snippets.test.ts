// Every ```sh snippet of README.md and docs/*.md runs against the built binary (`npm run build` -> ./mailsvc,
// built here when missing or older than src/): one temp folder, one `./mailsvc serve` with MAILSVC_SANDBOX=true on
// a free port and one bash session per document, the blocks in document order, so a variable one block sets is
// there for the next, as for a reader pasting them. No DNS: the sandbox captures the mail. Conventions (how a block
// is marked not run, `# expect:` checks) are in ./support.ts.

import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freeTcpPort } from "../support/server";
import { waitFor } from "../support/wait";
import { checkJson, documents, ensureBinary, extractSnippets, sessionScript, splitOutput, type Snippet } from "./support";

const SESSION_TIMEOUT_MS = 60_000;

interface Session {
  stdout: string;
  stderr: string;
  exitCode: number | null;
  timedOut: boolean;
  serverLog: () => string;
}

/** A clean environment: no MAILSVC_* setting of the caller leaks into the reader's shell. */
function readerEnv(dir: string): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !k.startsWith("MAILSVC_")) env[k] = v;
  return { ...env, HOME: dir, PWD: dir };
}

async function runDocument(binary: string, snippets: Snippet[]): Promise<Session> {
  const dir = mkdtempSync(join(tmpdir(), "mailsvc-docs-"));
  symlinkSync(binary, join(dir, "mailsvc"));
  const port = await freeTcpPort();
  const env = readerEnv(dir);
  let log = "";
  const server = Bun.spawn(["./mailsvc", "serve"], {
    cwd: dir,
    env: { ...env, MAILSVC_SANDBOX: "true", MAILSVC_PORT: String(port), MAILSVC_HOST: "127.0.0.1", MAILSVC_LOG_REQUESTS: "false" },
    stdout: "pipe",
    stderr: "pipe",
  });
  for (const s of [server.stdout, server.stderr] as ReadableStream<Uint8Array>[])
    void (async () => {
      for await (const chunk of s) log += new TextDecoder().decode(chunk);
    })();
  try {
    await waitFor(() => fetch(`http://127.0.0.1:${port}/config`).then((r) => r.ok, () => false), {
      timeoutMs: 15_000,
      intervalMs: 50,
      what: "./mailsvc serve",
    }).catch((e) => {
      throw new Error(`${(e as Error).message}; output: ${log}`);
    });
    const bash = Bun.spawn(["bash", "--noprofile", "--norc", "-s"], { cwd: dir, env, stdin: "pipe", stdout: "pipe", stderr: "pipe" });
    bash.stdin.write(sessionScript(snippets, port));
    bash.stdin.end();
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      bash.kill("SIGKILL");
    }, SESSION_TIMEOUT_MS);
    const [stdout, stderr, exitCode] = await Promise.all([new Response(bash.stdout).text(), new Response(bash.stderr).text(), bash.exited]);
    clearTimeout(timer);
    return { stdout, stderr, exitCode, timedOut, serverLog: () => log };
  } finally {
    server.kill("SIGTERM");
    await server.exited;
    rmSync(dir, { recursive: true, force: true });
  }
}

test("jq, curl and bash are installed (the snippets use them)", () => {
  for (const tool of ["jq", "curl", "bash"]) expect(Bun.which(tool), `${tool} on PATH`).not.toBeNull();
});

let binary = "";
beforeAll(() => {
  binary = ensureBinary();
}, 180_000);

for (const doc of documents()) {
  const snippets = extractSnippets(doc);
  if (snippets.length === 0) continue;
  describe(doc, () => {
    let session: Session | null = null;
    let out: ReturnType<typeof splitOutput> | null = null;
    const runnable = snippets.filter((s) => !s.skip);
    if (runnable.length > 0) {
      beforeAll(async () => {
        session = await runDocument(binary, snippets);
        out = splitOutput(session.stdout);
      }, SESSION_TIMEOUT_MS + 30_000);
    }
    afterAll(() => {
      session = null;
    });
    for (const s of snippets) {
      const name = `sh block ${s.index} (line ${s.line}): ${s.code.split("\n")[0]!.slice(0, 70)}`;
      if (s.skip) {
        test.skip(`${name} [not run: ${s.skip}]`, () => {});
        continue;
      }
      test(name, () => {
        const ses = session!;
        const o = out!;
        const context = () =>
          `\n--- block (${doc}:${s.line}) ---\n${s.code}\n--- stdout ---\n${ses.stdout.slice(-4000)}\n--- stderr ---\n${ses.stderr.slice(-4000)}` +
          (ses.timedOut ? `\n(the session was killed after ${SESSION_TIMEOUT_MS} ms)` : "") +
          `\n--- server ---\n${ses.serverLog().slice(-2000)}`;
        if (!o.started.has(s.index)) throw new Error(`not reached: an earlier block of ${doc} failed${context()}`);
        if (!o.ended.has(s.index)) throw new Error(`the block failed (exit code ${ses.exitCode})${context()}`);
        const printed = o.whole.get(s.index) ?? "";
        if (/"success"\s*:\s*false/.test(printed)) throw new Error(`the block printed an error answer:\n${printed}${context()}`);
        s.checks.forEach((group, k) => {
          const segment = o.segments.get(`${s.index}:${k}`) ?? "";
          for (const e of group) {
            if (e.kind === "text") {
              if (!segment.includes(e.value)) throw new Error(`expected the output to contain ${JSON.stringify(e.value)}; it was:\n${segment}${context()}`);
            } else {
              const r = checkJson(segment, e.value);
              if (!r.ok) throw new Error(`expected ${e.value} to hold on the last JSON printed (${r.detail}); output:\n${segment}${context()}`);
            }
          }
        });
      });
    }
  });
}
