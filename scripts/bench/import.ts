// CSV import: a 100,000-row (~5 MB) file uploaded to `mailsvc serve` (child process), timed from
// the upload until the job reports completed; beside ceilings measured in the same run: parsing
// the same file with csv-parse alone, and raw bun:sqlite inserts of the same contacts in 10k-row
// transactions.   bun scripts/bench/import.ts [rows=100000]
import { parse } from "csv-parse";
import { Readable } from "node:stream";
import { createProject, fmt, openMigrated, startBenchServer, tempDb } from "./audience-helpers";

const ROWS = Number(process.argv[2] ?? 100_000);
const PLANS = ["free", "pro", "team", "enterprise"];
const CITIES = ["Oslo", "Lyon", "Porto", "Kyoto", "Lima", "Austin", "Cork", "Graz"];

const lines = ["email,firstName,plan,city,subscribed"];
for (let i = 0; i < ROWS; i++) {
  lines.push(`person${i}@example${i % 97}.com,First${i % 5000},${PLANS[i % 4]},${CITIES[i % 8]},${i % 10 === 0 ? "no" : "yes"}`);
}
const csv = lines.join("\n") + "\n";
const bytes = Buffer.byteLength(csv);

// ---- ceilings ---------------------------------------------------------------------------------------
let t0 = performance.now();
let parsed = 0;
for await (const _ of Readable.from([csv]).pipe(parse({ bom: true, relax_column_count: true }))) parsed++;
const parseMs = performance.now() - t0;

const raw = tempDb();
const db = openMigrated(raw.db);
const now = Date.now();
db.query("INSERT INTO projects (id, name, public_key, secret_key, created_at, updated_at) VALUES ('p', 'p', 'pk_x', 'sk_x', ?, ?)").run(now, now);
const ins = db.query("INSERT INTO contacts (id, project_id, email, subscribed, data, created_at, updated_at) VALUES (?, 'p', ?, ?, ?, ?, ?)");
t0 = performance.now();
for (let b = 0; b < ROWS; b += 10_000) {
  db.transaction(() => {
    for (let i = b; i < Math.min(ROWS, b + 10_000); i++) {
      ins.run(Bun.randomUUIDv7(), `person${i}@example${i % 97}.com`, 1, JSON.stringify({ firstName: `First${i}`, plan: PLANS[i % 4] }), now, now);
    }
  })();
}
const insertMs = performance.now() - t0;
db.close();
raw.cleanup();

// ---- the service --------------------------------------------------------------------------------------
const t = tempDb();
const project = await createProject(t.db);
const srv = await startBenchServer(t.db);
const auth = { authorization: `Bearer ${project.secret}` };
const fd = new FormData();
fd.append("file", new File([csv], "contacts.csv", { type: "text/csv" }));
t0 = performance.now();
const up = await fetch(srv.url + "/contacts/import", { method: "POST", headers: auth, body: fd });
const uploadMs = performance.now() - t0;
if (up.status !== 202) throw new Error(`upload failed: ${up.status} ${await up.text()}`);
const { jobId } = (await up.json()) as { jobId: string };
let status: any;
let maxRss = 0;
for (;;) {
  status = await (await fetch(`${srv.url}/contacts/import/${jobId}`, { headers: auth })).json();
  maxRss = Math.max(maxRss, srv.rssMb());
  if (status.state === "completed" || status.state === "failed") break;
  await Bun.sleep(20);
}
const totalMs = performance.now() - t0;
const list = (await (await fetch(`${srv.url}/contacts?limit=1`, { headers: auth })).json()) as { total: number };
await srv.stop();
t.cleanup();

console.log(`CSV import of ${fmt(ROWS)} rows (${fmt(bytes / 1024 / 1024, 2)} MB), 5 columns`);
console.log(`  service : ${fmt(totalMs / 1000, 2)} s from upload to completed (upload answered in ${fmt(uploadMs)} ms) = ${fmt(ROWS / (totalMs / 1000))} rows/s; state ${status.state}, ${fmt(status.result.created)} created, ${fmt(status.result.failed)} failed, list total ${fmt(list.total)}; server RSS max ${fmt(maxRss)} MB`);
console.log(`  ceiling : csv-parse alone ${fmt(parseMs)} ms (${fmt(parsed)} records); raw bun:sqlite inserts in 10k-row transactions ${fmt(insertMs)} ms (${fmt(ROWS / (insertMs / 1000))} rows/s); same run`);
console.log(`  bar     : < 10 s -> ${totalMs < 10_000 && status.state === "completed" && status.result.created === ROWS ? "PASS" : "FAIL"}`);
