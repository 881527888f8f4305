// The feedback loop's hot paths, each beside a ceiling measured in the same run:
// 1. Decoration of a 20 KB MARKETING body with 20 links as the delivery engine does it (runs once per
//    campaign recipient): planDecoration (main thread, one query) + applyDecoration (build worker),
//    beside a bare HTMLRewriter pass with a no-op link handler over the same HTML (what merely
//    visiting every link with a streaming HTML parser costs) and a bare regex pass over the links.
// 2. The open pixel over HTTP (repeat opens: verify token, read the email row, answer the GIF),
//    beside a bare Elysia route answering the same GIF.
//   bun scripts/bench/tracking.ts [seconds]
import { Database } from "bun:sqlite";
import { join } from "node:path";
import { Kysely } from "kysely";
import { BunSqliteDialect } from "../../src/db/bun-sqlite-dialect";
import type { DB } from "../../src/db";
import { applyDecoration, planDecoration } from "../../src/mail/tracking/tracking";
import { loadTokenSecret, openToken, secretOf } from "../../src/mail/tracking/tokens";
import { LinkKeys, storeLinks, type FreshLinks } from "../../src/mail/tracking/tracked-links";
import { createAccount, makeApi, startServer } from "../../test/support/server";
import { fmt, freePort, load, ROOT, rssMb, startScript, tempDir, waitFor } from "./lib";

const seconds = Number(process.argv[2] ?? 10);

function body20k(): string {
  let html = "<html><head><title>May</title></head><body><table width='600'>";
  let i = 0;
  while (html.length < 20_000) {
    html += `<tr><td style="padding:8px;font-family:Arial"><h2>Story ${i}</h2><p>${"Lorem ipsum dolor sit amet, consectetur adipiscing elit. ".repeat(5)}</p>`;
    if (i < 20) html += `<a href="https://shop.example.com/products/${i}?utm_source=news&amp;utm_campaign=may">Read more</a>`;
    html += "</td></tr>";
    i++;
  }
  return html + "</table></body></html>";
}

// ---- 1. decoration ---------------------------------------------------------------------------------
{
  const srv = await startServer();
  const acct = await createAccount(srv.api);
  const html = body20k();
  const n = 3000;
  const now = Date.now();
  await srv.ctx.db.insertInto("email_contents").values({ id: "c1", project_id: acct.projectId, subject: "s", html, from_email: "news@example.com", from_name: null, reply_to: null, type: "MARKETING", headers: null, attachments: null, created_at: now }).execute();
  const ids: string[] = [];
  for (let i = 0; i < n; i++) ids.push(Bun.randomUUIDv7());
  await srv.ctx.db.transaction().execute(async (trx) => {
    for (const id of ids) {
      await trx.insertInto("emails").values({ id, project_id: acct.projectId, content_id: "c1", contact_id: "k" + id, to_email: `r${id}@example.org`, to_name: null, vars: null, status: "PENDING", source_type: "CAMPAIGN", campaign_id: null, template_id: null, workflow_execution_id: null, message_id: null, next_attempt_at: null, lease_until: null, last_reply: null, mx_host: null, created_at: now, updated_at: now, sent_at: null, delivered_at: null, opened_at: null, clicked_at: null, bounced_at: null, complained_at: null, failed_at: null }).execute();
    }
  });

  const noop = () => new HTMLRewriter().on("a[href]", { element(el) { el.getAttribute("href"); } });
  for (let i = 0; i < 200; i++) noop().transform(html);
  let t0 = performance.now();
  for (let i = 0; i < n; i++) noop().transform(html);
  const ceiling = n / ((performance.now() - t0) / 1000);
  const bare = () => html.replace(/<a\b[^>]*>/gi, (t) => t);
  for (let i = 0; i < 200; i++) bare();
  t0 = performance.now();
  for (let i = 0; i < n * 5; i++) bare();
  const regexRate = (n * 5) / ((performance.now() - t0) / 1000);

  const linkKeys = new LinkKeys(secretOf(srv.ctx));
  const decorate = async (emailId: string, contactId: string, toEmail: string) => {
    const plan = (await planDecoration(srv.ctx, { projectId: acct.projectId, emailId, contactId, toEmail, type: "MARKETING", bodyUsesUnsubscribeUrl: false }))!;
    const fresh: FreshLinks = [];
    const d = applyDecoration(html, plan, linkKeys.forMessage(plan.projectId, plan.linkGeneration, fresh));
    await storeLinks(srv.ctx, plan.projectId, fresh);
    return d;
  };
  for (let i = 0; i < 200; i++) await decorate(ids[i]!, "k", "r@example.org");
  t0 = performance.now();
  let size = 0;
  for (const id of ids) {
    const d = await decorate(id, "k" + id, `r${id}@example.org`);
    size += d.html.length;
  }
  const rate = n / ((performance.now() - t0) / 1000);
  await srv.close();
  console.log(`bare regex pass over the links, 20 KB / 20 links   ${fmt(regexRate)} msg/s   (ceiling)`);
  console.log(`HTMLRewriter no-op link handler, same HTML        ${fmt(ceiling)} msg/s   (reference)`);
  console.log(`planDecoration + applyDecoration MARKETING (pixel, 20 tracked links, footer, List-Unsubscribe, 1 query)  ${fmt(rate)} msg/s  (${Math.round((rate / regexRate) * 100)}% of the regex ceiling; body ${(html.length / 1024).toFixed(1)} KB -> ${(size / n / 1024).toFixed(1)} KB)`);
}

// ---- 2. open pixel over HTTP ------------------------------------------------------------------------
{
  const bare = await startScript(`
import { Elysia } from "elysia";
const gif = Buffer.from("R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7", "base64");
new Elysia().get("/", () => new Response(gif, { headers: { "content-type": "image/gif", "cache-control": "no-store" } })).listen({ port: Number(process.env.PORT), hostname: "127.0.0.1" });
`);
  const port = await freePort();
  const dir = tempDir();
  const dbPath = join(dir, "bench.db");
  const proc = Bun.spawn([process.execPath, join(ROOT, "src/main.ts"), "serve"], {
    env: { ...process.env, MAILSVC_DB: dbPath, MAILSVC_HOST: "127.0.0.1", MAILSVC_PORT: String(port), MAILSVC_LOG_REQUESTS: "false", MAILSVC_RATE_LIMIT: "100000000" },
    stdout: "ignore",
    stderr: "inherit",
  });
  const url = `http://127.0.0.1:${port}`;
  await waitFor(url + "/config");
  const acct = await createAccount(makeApi(url), "bench");

  // Seed one delivered email in the server's file and sign its open token with the stored secret.
  const db = new Database(dbPath);
  db.exec("PRAGMA busy_timeout = 5000");
  const now = Date.now();
  db.query("INSERT INTO email_contents (id, project_id, subject, html, from_email, type, created_at) VALUES ('c1', ?, 's', 'h', 'news@example.com', 'MARKETING', ?)").run(acct.projectId, now);
  const emailId = Bun.randomUUIDv7();
  db.query("INSERT INTO emails (id, project_id, content_id, to_email, status, source_type, created_at, updated_at) VALUES (?, ?, 'c1', 'r@example.org', 'DELIVERED', 'CAMPAIGN', ?, ?)").run(emailId, acct.projectId, now, now);
  // Just what loadTokenSecret and openToken read: the database and the token-secret cache.
  const fakeCtx = { db: new Kysely<DB>({ dialect: new BunSqliteDialect(db) }), services: { caches: { tokenSecret: { value: null } } } } as any;
  await loadTokenSecret(fakeCtx);
  const pixel = `${url}/t/o/${openToken(fakeCtx, emailId)}`;
  db.close();
  if ((await fetch(pixel)).status !== 200) throw new Error("pixel did not answer 200");

  await load({ url: bare.url + "/", seconds: 2 });
  await load({ url: pixel, seconds: 2 });
  const ceiling = await load({ url: bare.url + "/", seconds });
  const px = await load({ url: pixel, seconds });
  const rss = rssMb(proc.pid);
  await bare.kill();
  proc.kill("SIGTERM");
  await proc.exited;
  console.log(`bare Elysia GIF route                   ${fmt(ceiling.rps)} req/s  p99 ${ceiling.p99} ms   (ceiling)`);
  console.log(`GET /t/o/:token (repeat open)           ${fmt(px.rps)} req/s  p99 ${px.p99} ms   non-2xx ${px.non2xx}  (${Math.round((px.rps / ceiling.rps) * 100)}% of ceiling, server RSS ${rss} MB)`);
}
