import { useEngine } from "./db/dialect";
import { Elysia } from "elysia";
import { randomBytes } from "node:crypto";
import { systemClock, type Clock } from "./clock";
import type { Config } from "./config";
import { emptyContributions, emptyHooks, type AppContext, type Services } from "./context";
import { gatherContributions } from "./http/module";
import { buildServices } from "./services";
import { openDatabase, type Store } from "./db";
import { migrateStore } from "./db/migrate";
import { settingOrCreate } from "./db/settings";
import { checkBodilessRequest, checkDeclaredLength, needsKeyBeforeBody, parseBody, rejectedBodies, unreadBodies } from "./http/body";
import { invalidApiKey } from "./http/errors";
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
import { emailStatusCounts } from "./mail/outbox/outbox-store";
import { periodicStore } from "./jobs/periodic-store";

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

/**
 * Bun's own request body cap, above the largest per-route limit (src/http/body.ts: /v1/send, 60 MB),
 * so that every route's limit is answered by us, in the envelope.
 */
export const MAX_BODY_BYTES = 64 * 1024 * 1024;

async function loadJwtSecret(store: Store, configured?: string): Promise<string> {
  if (configured) return configured;
  return settingOrCreate(store.db, "jwt_secret", () => randomBytes(48).toString("base64url"));
}

/** Opens the database, migrates it and builds the per-instance context (no listener). */
/**
 * The event feed on PostgreSQL: cursors locked (several instances), and rounds at least 100 ms apart
 * reading up to a full batch. A round's cost there is round trips (each holding the process's writer
 * turn, which /v1/track batches wait for), not event-loop time: fewer, larger rounds leave the writer
 * to the tracks (scripts/bench/engines.ts). An event reaches its consumers up to ~100 ms later under load.
 */
const POSTGRES_FEED = { lockCursors: true, minGapMs: 100, roundBudgetMs: Number.POSITIVE_INFINITY };

export async function createContext(config: Config, opts: StartOptions = {}): Promise<AppContext> {
  const store = openDatabase(config);
  useEngine(store.engine);
  try {
    await migrateStore(store);
  } catch (e) {
    await store.close();
    throw e;
  }
  const clock = opts.clock ?? systemClock;
  const log = opts.log ?? createLogger();
  const metrics = new Metrics(() => emailStatusCounts(store), config.instanceId);
  const jobs = new JobQueue(store.db, clock, log, { pollMs: opts.jobPollMs, metrics, leaseMs: config.leaseMs, instanceId: config.instanceId, engine: store.engine });
  const ctx: AppContext = {
    metrics,
    config,
    store,
    db: store.db,
    clock,
    log,
    jobs,
    feed: new EventFeed(store.db, clock, log, store.engine === "postgres" ? POSTGRES_FEED : {}),
    schedules: new Schedules(jobs, log, () => clock.now(), periodicStore(store.db, store.engine, config.instanceId)),
    keys: new KeyCache(store.db),
    rateLimiter: new RateLimiter(config.rateLimit, clock),
    jwtSecret: await loadJwtSecret(store, config.jwtSecret),
    contributions: gatherContributions(MODULES, emptyContributions()),
    hooks: emptyHooks(),
    services: undefined as unknown as Services,
  };
  ctx.services = buildServices(ctx);
  return ctx;
}


export function buildApp(ctx: AppContext) {
  const started = new WeakMap<Request, number>();
  // normalize "typebox": extra properties are dropped by TypeBox's Clean, which leaves a value of the
  // wrong type as it is for the validator to refuse. Elysia's default cleaner (exact-mirror) rebuilt
  // it from the schema instead: a string where an object belongs became `{ "0": "a", "1": "b", … }`
  // (a 1 MB string, a million keys) or `{}`, which then passed validation.
  let app = new Elysia({ serve: { maxRequestBodySize: MAX_BODY_BYTES }, normalize: "typebox" })
    .use(errorPlugin(ctx.log, () => ctx.clock.now()))
    .use(corsPlugin())
    .onRequest(async ({ request }) => {
      if (request.method === "GET" || request.method === "HEAD") return checkBodilessRequest(request);
      // Over the route's limit by its own declaration: 413 before a byte of the body is read.
      checkDeclaredLength(request);
      if (needsKeyBeforeBody(request)) {
        const key = /^Bearer\s+(\S+)\s*$/i.exec(request.headers.get("authorization") ?? "")?.[1];
        const found = key ? await ctx.keys.resolve(key) : null;
        if (!found || found.kind !== "secret") {
          unreadBodies.add(request);
          throw invalidApiKey("A valid secret key is required (checked before a large body is read)");
        }
      }
    })
    .onParse(({ request, contentType, route }) =>
      // Every body is read through a byte limit per route (src/http/body.ts); JSON is refused when it
      // nests too deep before it is parsed. A malformed or too-deep body is remembered instead of
      // failing at once, so authentication still answers first (a request without a valid key is
      // 401 whatever its body); the auth macro or the error plugin then answers 400 / 422.
      parseBody(request, contentType, (r) => malformedBodies.add(r), route),
    )
    .onBeforeHandle({ as: "global" }, ({ request }) => {
      // Routes without authentication whose schema accepted the empty stand-in body.
      const rejected = rejectedBodies.get(request);
      if (rejected) throw rejected;
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

/** Growth of the resident memory (since the lowest reading, or the last collection) that triggers a full collection. */
export const GC_GROWTH_BYTES = 48 * 1024 * 1024;

/**
 * A full collection whenever the resident memory has grown by GC_GROWTH_BYTES. Hostile traffic
 * (megabyte bodies refused, 50 MB uploads, thousands of malformed requests) leaves garbage the
 * collector takes its time over, and the allocator keeps the pages it held: left alone a 60 s hostile
 * run ended near 300 MB. A collection costs a few milliseconds at this heap size and gives most of it back.
 */
export function watchMemory(intervalMs = 500): () => void {
  let floor = process.memoryUsage.rss();
  const timer = setInterval(() => {
    const rss = process.memoryUsage.rss();
    floor = Math.min(floor, rss);
    if (rss < floor + GC_GROWTH_BYTES) return;
    Bun.gc(true);
    floor = process.memoryUsage.rss();
  }, intervalMs);
  (timer as { unref?: () => void }).unref?.();
  return () => clearInterval(timer);
}

export async function startService(config: Config, opts: StartOptions = {}): Promise<RunningService> {
  const ctx = await createContext(config, opts);
  // Caches and wake-ups across instances (PostgreSQL; nothing on SQLite): listening from the start.
  ctx.services.peers.start();
  for (const m of MODULES) await m.install?.(ctx);
  const app = buildApp(ctx);
  app.listen({ port: config.port, hostname: config.host });
  const port = app.server!.port!;
  if (!config.publicUrl || config.publicUrl === "http://localhost:0") ctx.config.publicUrl = `http://localhost:${port}`;

  const released = await clearUnfinishedKeys(ctx);
  if (released) ctx.log.info("idempotency keys of unfinished requests released", { count: released });
  await ctx.jobs.start();
  await ctx.feed.start();
  await ctx.schedules.arm();
  ctx.schedules.cron("purge-idempotency-keys", "0 * * * *", () => purgeExpiredKeys(ctx));
  if (ctx.store.engine === "sqlite") {
    ctx.schedules.cron("wal-checkpoint", "*/5 * * * *", () => ctx.store.checkpoint());
  }
  for (const m of MODULES) await m.start?.(ctx);
  const unwatchMemory = watchMemory();

  let stopping: Promise<void> | null = null;
  return {
    ctx,
    app,
    port,
    url: `http://${config.host === "0.0.0.0" ? "127.0.0.1" : config.host}:${port}`,
    stop() {
      stopping ??= (async () => {
        unwatchMemory();
        await app.stop();
        for (const m of [...MODULES].reverse()) await m.stop?.(ctx);
        ctx.schedules.stop();
        await ctx.services.peers.stop();
        await ctx.feed.stop();
        await ctx.jobs.stop();
        await ctx.store.close();
        ctx.log.flush();
      })();
      return stopping;
    },
  };
}
