/**
 * WEBHOOK: performed outside any transaction (network), its outcome committed by the executor.
 * Through the one SSRF-guarded client (checked after DNS resolution and on every redirect, 10 s
 * timeout), signed per Standard Webhooks with the project's webhookSecret. 2xx continues; 4xx
 * fails; 5xx and network failures are retried 3 times after the first waits of
 * MAILSVC_WEBHOOK_RETRY_SCHEDULE, then fail. The output keeps the status and up to 1 KB of the body.
 */
import type { ContactRow } from "../../../../audience/contacts";
import { parseData } from "../../../../audience/data-rules";
import type { AppContext } from "../../../../context";
import { renderJson, renderSubject, renderText } from "../../../../mail/message/render";
import { safeFetch } from "../../../../net/safe-fetch";
import { newWebhookSecret, signWebhook } from "../../../../webhooks/sign";
import type { WebhookConfig } from "../configs";
import { projectWebhookSecret, type ExecutionRow, type LoadedStep, type LoadedWorkflow } from "../store";
import { fail, next, type StepOutcome } from "../types";

export interface WebhookInput {
  workflow: LoadedWorkflow;
  execution: ExecutionRow;
  step: LoadedStep;
  contact: ContactRow;
  /** The step's open log row (a retry): its output carries the attempts so far. */
  openLog: { id: string; started_at: number; output: string | null } | null;
}

export const WEBHOOK_TIMEOUT_MS = 10_000;
export const WEBHOOK_RETRIES = 3;
const MAX_BODY = 1024;

const parse = (s: string | null) => (s ? JSON.parse(s) : null);

export async function performWebhook(ctx: AppContext, input: WebhookInput): Promise<StepOutcome> {
  const c = input.step.config as unknown as WebhookConfig;
  const { contact, execution, workflow } = input;
  const prior = (parse(input.openLog?.output ?? null) ?? {}) as { attempts?: number };
  const attempts = (prior.attempts ?? 0) + 1;
  const data = parseData(contact.data);
  const event = parse(execution.trigger_event) as { id: string; name: string; data: Record<string, unknown> } | null;
  const context = (parse(execution.context) ?? {}) as Record<string, unknown>;
  const vars = { ...data, email: contact.email, id: contact.id, subscribed: contact.subscribed === 1, event: event?.data ?? {}, workflow: context };

  let url: string;
  let body: string | undefined;
  const headers: Record<string, string> = {};
  try {
    url = renderText(c.url, vars).trim();
    for (const [k, v] of Object.entries(c.headers ?? {})) headers[k] = renderSubject(v, vars);
    if (c.method !== "GET") {
      if (typeof c.body === "string") body = renderText(c.body, vars);
      else if (c.body !== undefined) body = renderJson(JSON.stringify(c.body), vars);
      else {
        body = JSON.stringify({
          contact: { id: contact.id, email: contact.email, subscribed: contact.subscribed === 1, data },
          workflow: { id: workflow.id, name: workflow.name },
          execution: { id: execution.id },
          event,
        });
      }
      if (!Object.keys(headers).some((h) => h.toLowerCase() === "content-type")) headers["content-type"] = typeof c.body === "string" ? "text/plain; charset=utf-8" : "application/json";
    }
  } catch (e) {
    return fail(`The webhook could not be rendered: ${String((e as Error)?.message ?? e)}`, { attempts });
  }

  const secret = (await projectWebhookSecret(ctx.db, workflow.projectId, newWebhookSecret)) ?? "";
  const msgId = `msg_${execution.id}_${input.step.id}`;
  Object.assign(headers, signWebhook(secret, msgId, new Date(ctx.clock.now()), body ?? ""));
  const r = await safeFetch(ctx.config, { url, method: c.method, headers, body, timeoutMs: WEBHOOK_TIMEOUT_MS, maxBodyBytes: MAX_BODY });
  const output: Record<string, unknown> = { attempts, url, ...(r.status !== undefined ? { status: r.status } : {}), ...(r.body !== undefined ? { body: r.body.slice(0, MAX_BODY) } : {}) };
  if (r.ok) return next(undefined, output);
  const status = r.status;
  const permanent = r.errorKind === "refused" || r.errorKind === "invalid_url" || r.errorKind === "too_many_redirects" || (status !== undefined && status < 500);
  const error = status !== undefined ? `HTTP ${status}` : `${r.errorKind ?? "network"}: ${r.error ?? "request failed"}`;
  if (permanent || attempts > WEBHOOK_RETRIES) return fail(attempts > WEBHOOK_RETRIES && !permanent ? `${error} (after ${attempts} attempts)` : error, { ...output, error });
  const schedule = ctx.config.webhookRetryScheduleMs;
  const wait = schedule.length ? schedule[Math.min(attempts - 1, schedule.length - 1)]! : 10_000;
  return { kind: "retry", at: ctx.clock.now() + wait, error, output: { ...output, error } };
}
