import { Elysia } from "elysia";
import { randomBytes } from "node:crypto";
import { systemClock, type Clock } from "./clock";
import type { Config } from "./config";
import { emptyHooks, type AppContext } from "./context";
import { openStore } from "./db";
import { migrate } from "./db/migrate";
import { corsPlugin } from "./http/cors";
import { errorPlugin, malformedBodies } from "./http/error-plugin";
import { apiDocsRoutes } from "./http/openapi";
import { clearUnfinishedKeys, purgeExpiredKeys } from "./http/idempotency";
import { KeyCache } from "./http/keys";
import { createLogger, type Logger } from "./http/logger";
import { RateLimiter } from "./http/rate-limit";
import { EventFeed } from "./jobs/event-feed";
import { JobQueue } from "./jobs/queue";
import { Schedules } from "./jobs/schedules";
import { MODULES } from "./modules";
import { Metrics } from "./observability/metrics";

export interface RunningService {
  ctx: AppContext;
  app: Elysia<any, any, any, any, any, any, any>;
  url: string;
  port: number;
  stop(): Promise<void>;
}

export interface StartOptions {
  clock?: Clock;
  log?: Logger;
  /** Job loop poll interval (tests use a short one). */
  jobPollMs?: number;
}

/** The request body cap: a 40 MB message with base64 attachments is ~54 MB of JSON. */
export const MAX_BODY_BYTES = 60 * 1024 * 1024;

function loadJwtSecret(store: ReturnType<typeof openStore>, configured?: string): string {
  if (configured) return configured;
  const row = store.sqlite.query<{ value: string }, []>("SELECT value FROM settings WHERE key = 'jwt_secret'").get();
  if (row) return row.value;
  const secret = randomBytes(48).toString("base64url");
  store.sqlite.query("INSERT INTO settings (key, value) VALUES ('jwt_secret', ?)").run(secret);
  return secret;
}

/** Opens the database, migrates it and builds the per-instance context (no listener). */
export function createContext(config: Config, opts: StartOptions = {}): AppContext {
  const store = openStore(config.db);
  migrate(store.sqlite);
  const clock = opts.clock ?? systemClock;
  const log = opts.log ?? createLogger();
  const metrics = new Metrics(() => outboxCounts(store));
  const jobs = new JobQueue(store.db, clock, log, { pollMs: opts.jobPollMs, metrics });
  return {
    metrics,
    config,
    store,
    db: store.db,
    clock,
    log,
    jobs,
    feed: new EventFeed(store.db, clock, log),
    schedules: new Schedules(jobs, log, () => clock.now()),
    keys: new KeyCache(store.db),
    rateLimiter: new RateLimiter(config.rateLimit, clock),
    jwtSecret: loadJwtSecret(store, config.jwtSecret),
    hooks: emptyHooks(),
  };
}

function outboxCounts(store: ReturnType<typeof openStore>): Record<string, number> {
  const rows = store.sqlite.query<{ status: string; n: number }, []>("SELECT status, count(*) AS n FROM emails GROUP BY status").all();
  return Object.fromEntries(rows.map((r) => [r.status, r.n]));
}

export function buildApp(ctx: AppContext) {
  const started = new WeakMap<Request, number>();
  let app = new Elysia({ serve: { maxRequestBodySize: MAX_BODY_BYTES } })
    .use(errorPlugin(ctx.log))
    .use(corsPlugin())
    .onParse(async ({ request, contentType }) => {
      // JSON, and a body sent without a content type (curl -d), is parsed here. A malformed body is
      // remembered instead of failing at once, so authentication still answers first (a request
      // without a valid key is 401 whatever its body); the error plugin turns the body validation
      // failure that follows into 400.
      if (contentType && !contentType.startsWith("application/json")) return;
      const text = await request.text();
      if (!text) return;
      try {
        return JSON.parse(text);
      } catch {
        malformedBodies.add(request);
        return {};
      }
    });
  const http = ctx.metrics.http;
  app = app
    .onRequest(({ request }) => {
      started.set(request, performance.now());
    })
    .onAfterResponse({ as: "global" }, (c: any) => {
      const t0 = started.get(c.request);
      const ms = t0 === undefined ? 0 : performance.now() - t0;
      const status = String(c.set?.status ?? 200);
      // The route pattern, never the raw path: ids in paths would explode the label set.
      const route = c.route || "unmatched";
      http.record(c.request.method, route, status, ms / 1000);
      if (ctx.config.logRequests) {
        const path = c.path ?? new URL(c.request.url).pathname;
        ctx.log.line(`${c.request.method} ${path} ${status} ${ms.toFixed(1)}ms ${c.auth?.projectId || "-"}`);
      }
    }) as any;
  for (const m of MODULES) if (m.routes) app = app.use(m.routes(ctx)) as any;
  app = app.use(apiDocsRoutes(ctx, () => app)) as any;
  return app;
}

export async function startService(config: Config, opts: StartOptions = {}): Promise<RunningService> {
  const ctx = createContext(config, opts);
  for (const m of MODULES) await m.install?.(ctx);
  const app = buildApp(ctx);
  app.listen({ port: config.port, hostname: config.host });
  const port = app.server!.port!;
  if (!config.publicUrl || config.publicUrl === "http://localhost:0") ctx.config.publicUrl = `http://localhost:${port}`;

  await clearUnfinishedKeys(ctx);
  await ctx.jobs.start();
  await ctx.feed.start();
  await ctx.schedules.arm();
  ctx.schedules.cron("purge-idempotency-keys", "0 * * * *", () => purgeExpiredKeys(ctx));
  ctx.schedules.cron("wal-checkpoint", "*/5 * * * *", () => {
    ctx.store.sqlite.exec("PRAGMA wal_checkpoint(PASSIVE)");
  });
  for (const m of MODULES) await m.start?.(ctx);

  let stopping: Promise<void> | null = null;
  return {
    ctx,
    app,
    port,
    url: `http://${config.host === "0.0.0.0" ? "127.0.0.1" : config.host}:${port}`,
    stop() {
      stopping ??= (async () => {
        await app.stop();
        for (const m of [...MODULES].reverse()) await m.stop?.(ctx);
        ctx.schedules.stop();
        await ctx.feed.stop();
        await ctx.jobs.stop();
        ctx.store.close();
        ctx.log.flush();
      })();
      return stopping;
    },
  };
}
