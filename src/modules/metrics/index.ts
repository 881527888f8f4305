import { Elysia } from "elysia";
import { timingSafeEqual } from "node:crypto";
import type { AppContext } from "../../context";
import { unauthorized } from "../../http/errors";
import type { ModuleDef } from "../../http/module";

function tokenMatches(given: string | null, expected: string): boolean {
  const m = /^Bearer\s+(\S+)$/i.exec(given ?? "");
  if (!m) return false;
  const a = Buffer.from(m[1]!);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

/** GET /metrics in Prometheus text format; protected by MAILSVC_METRICS_TOKEN when it is set. */
export function metricsRoutes(ctx: AppContext) {
  return new Elysia().get("/metrics", async ({ request, set }) => {
    const token = ctx.config.metricsToken;
    if (token && !tokenMatches(request.headers.get("authorization"), token)) throw unauthorized("A valid metrics token is required");
    set.headers["content-type"] = ctx.metrics.registry.contentType;
    return (await ctx.metrics.registry.metrics()) + ctx.metrics.http.text();
  });
}

export const metricsModule: ModuleDef = { name: "metrics", routes: metricsRoutes };
