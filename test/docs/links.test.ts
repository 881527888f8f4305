// The documentation's references hold: every relative link of README.md and docs/*.md names a file of the
// repository (and an anchor, a heading of it), and every docs/<page>.md a source comment cites exists, with the
// quoted section it names ("docs/api.md \"Segments and conditions\"") among that page's headings.

import { expect, test } from "bun:test";
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, normalize } from "node:path";
import { documents, ROOT } from "./support";

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces to dashes. */
const slug = (h: string) =>
  h
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N} _-]/gu, "")
    .replace(/ /g, "-");

function headings(file: string, withLabels = false): string[] {
  let fence = false;
  const out: string[] = [];
  for (const l of readFileSync(file, "utf8").split("\n")) {
    if (/^\s*```/.test(l)) fence = !fence;
    const m = !fence && /^#{1,6} (.*)$/.exec(l);
    if (m) out.push(m[1]!);
    const label = !fence && /^- \*\*([^*]+?)\.?\*\*/.exec(l); // a bold bullet label ("- **Simulated recipients**") names a section too
    if (withLabels && label) out.push(label[1]!);
  }
  return out;
}

test("every relative link of README.md and docs/*.md resolves (file and anchor)", () => {
  const broken: string[] = [];
  for (const doc of documents()) {
    const text = readFileSync(join(ROOT, doc), "utf8");
    for (const m of text.matchAll(/\]\(([^)\s]+)\)/g)) {
      const target = m[1]!;
      if (/^[a-z]+:/.test(target)) continue;
      const [path, anchor] = target.split("#");
      const file = path ? normalize(join(ROOT, dirname(doc), path)) : join(ROOT, doc);
      if (!existsSync(file)) {
        broken.push(`${doc}: ${target} (no such file)`);
        continue;
      }
      if (anchor && file.endsWith(".md") && !headings(file).map(slug).includes(anchor)) broken.push(`${doc}: ${target} (no such heading)`);
    }
  }
  expect(broken).toEqual([]);
});

test("every docs page a source comment cites exists, with the section it names", () => {
  const missing: string[] = [];
  const walk = (dir: string): string[] =>
    readdirSync(dir).flatMap((f) => (statSync(join(dir, f)).isDirectory() ? walk(join(dir, f)) : /\.tsx?$/.test(f) ? [join(dir, f)] : []));
  let cited = 0;
  for (const file of walk(join(ROOT, "src"))) {
    const text = readFileSync(file, "utf8");
    for (const m of text.matchAll(/docs\/([a-z-]+\.md)(?: \\?"([^"\\]+)\\?")?/g)) {
      cited++;
      const page = join(ROOT, "docs", m[1]!);
      const where = `${file.slice(ROOT.length + 1)}: docs/${m[1]}${m[2] ? ` "${m[2]}"` : ""}`;
      if (!existsSync(page)) missing.push(`${where} (no such page)`);
      else if (m[2] && !headings(page, true).some((h) => h.toLowerCase().includes(m[2]!.toLowerCase()))) missing.push(`${where} (no such section)`);
    }
    for (const bad of text.matchAll(/[^\n]*(?:decisions\.md|api-spec\.md|shared\/spec|stack[- ]notes)[^\n]*/g)) missing.push(`${file.slice(ROOT.length + 1)}: cites a file outside the repository: ${bad[0].trim()}`);
  }
  expect(cited).toBeGreaterThan(10);
  expect(missing).toEqual([]);
});
