// The import graph of src (issue 35): every file belongs to a layer, no file imports from a layer
// above its own, and no files import each other in a cycle. Type-only imports count: a reader
// walks them the same way. The layers and why are in docs/architecture.md ("Layers").
import { describe, expect, test } from "bun:test";
import { existsSync, readFileSync } from "node:fs";
import { dirname, join, normalize } from "node:path";
import { Glob } from "bun";

const ROOT = join(import.meta.dir, "..", "..");

/** Lowest first. A file belongs to the last layer whose prefix it matches. */
export const LAYERS: { name: string; prefixes: string[] }[] = [
  { name: "base", prefixes: ["src/clock.ts", "src/config.ts", "src/version.ts", "src/types.d.ts", "src/slots.ts", "src/net/", "src/observability/", "src/db/"] },
  { name: "context", prefixes: ["src/context.ts", "src/http/", "src/jobs/"] },
  { name: "audience", prefixes: ["src/audience/"] },
  { name: "webhooks", prefixes: ["src/webhooks/"] },
  { name: "mail", prefixes: ["src/mail/"] },
  { name: "web", prefixes: ["src/web/"] },
  { name: "modules", prefixes: ["src/modules/"] },
  { name: "assembly", prefixes: ["src/server.ts", "src/services.ts", "src/main.ts", "src/doctor.ts"] },
];

function layerOf(file: string): number {
  let found = -1;
  LAYERS.forEach((l, i) => {
    if (l.prefixes.some((p) => file === p || (p.endsWith("/") && file.startsWith(p)))) found = i;
  });
  return found;
}

const SPEC = /(?:\bfrom|\bimport|\bimport\()\s*["'](\.{1,2}\/[^"']*)["']/g;

function sourceFiles(): string[] {
  const out: string[] = [];
  for (const f of new Glob("src/**/*.{ts,tsx}").scanSync({ cwd: ROOT })) out.push(f.replaceAll("\\", "/"));
  return out.sort();
}

function resolveImport(from: string, spec: string, files: Set<string>): string | null {
  const base = normalize(join(dirname(from), spec)).replaceAll("\\", "/");
  for (const c of [base, `${base}.ts`, `${base}.tsx`, `${base}/index.ts`, `${base}/index.tsx`]) if (files.has(c)) return c;
  return null;
}

export function importGraph(): Map<string, Set<string>> {
  const files = sourceFiles();
  const set = new Set(files);
  const graph = new Map<string, Set<string>>();
  for (const f of files) {
    const text = readFileSync(join(ROOT, f), "utf8");
    const to = new Set<string>();
    for (const m of text.matchAll(SPEC)) {
      const t = resolveImport(f, m[1]!, set);
      if (t) to.add(t);
    }
    graph.set(f, to);
  }
  return graph;
}

/** Strongly connected components of more than one file (Tarjan). */
function cycles(graph: Map<string, Set<string>>): string[][] {
  let index = 0;
  const idx = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const on = new Set<string>();
  const out: string[][] = [];
  const visit = (v: string) => {
    idx.set(v, index);
    low.set(v, index++);
    stack.push(v);
    on.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!idx.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (on.has(w)) low.set(v, Math.min(low.get(v)!, idx.get(w)!));
    }
    if (low.get(v) === idx.get(v)) {
      const comp: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        on.delete(w);
        comp.push(w);
      } while (w !== v);
      if (comp.length > 1) out.push(comp.sort());
    }
  };
  for (const v of graph.keys()) if (!idx.has(v)) visit(v);
  return out;
}

describe("the import graph of src", () => {
  const graph = importGraph();

  test("every file is in a layer", () => {
    expect([...graph.keys()].filter((f) => layerOf(f) < 0)).toEqual([]);
  });

  test("no import points up to a higher layer", () => {
    const up: string[] = [];
    for (const [from, tos] of graph) {
      for (const to of tos) {
        if (layerOf(to) > layerOf(from)) up.push(`${from} (${LAYERS[layerOf(from)]!.name}) -> ${to} (${LAYERS[layerOf(to)]!.name})`);
      }
    }
    expect(up).toEqual([]);
  });

  test("no cycle between files", () => {
    expect(cycles(graph)).toEqual([]);
  });

  test("the checker sees what it checks: relative imports resolve, a planted cycle and an upward edge are caught", () => {
    expect(existsSync(join(ROOT, "src/server.ts"))).toBe(true);
    expect(graph.get("src/server.ts")!.size).toBeGreaterThan(10);
    const planted = new Map<string, Set<string>>([
      ["a.ts", new Set(["b.ts"])],
      ["b.ts", new Set(["c.ts"])],
      ["c.ts", new Set(["a.ts"])],
      ["d.ts", new Set(["a.ts"])],
    ]);
    expect(cycles(planted)).toEqual([["a.ts", "b.ts", "c.ts"]]);
    expect(layerOf("src/http/auth.ts")).toBeLessThan(layerOf("src/modules/send/service.ts"));
  });
});
