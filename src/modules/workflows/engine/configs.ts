/**
 * Step config validation (422 paths under `config.`) and normalisation. Pure except for the
 * CONDITION tree, which goes through the one condition compiler's validator.
 */
import { dataErrors } from "../../../audience/data-rules";
import type { FieldError } from "../../../http/errors";
import { isLoopbackName } from "../../../net/address-policy";
import { conditionErrors } from "./condition-adapter";
import type { StepType } from "./types";

export const DELAY_UNITS = { minutes: 60_000, hours: 3_600_000, days: 86_400_000 } as const;
export type DelayUnit = keyof typeof DELAY_UNITS;
export const MAX_DELAY_MS = 365 * 86_400_000;
export const WEBHOOK_METHODS = ["POST", "GET", "PUT", "PATCH", "DELETE"] as const;
export const SUBSCRIPTION_ACTIONS = ["none", "subscribe", "unsubscribe"] as const;

/** `trackOpens`: the open pixel for this step's emails; absent/null = the template's trackOpens (itself null = the project's mode). */
export interface SendEmailConfig { templateId: string; trackOpens?: boolean | null }
export interface DelayConfig { amount: number; unit: DelayUnit }
export interface WaitForEventConfig { eventName: string; timeout?: number }
export type ConditionConfig = Record<string, unknown>;
export interface WebhookConfig { url: string; method: (typeof WEBHOOK_METHODS)[number]; headers?: Record<string, string>; body?: unknown }
export interface UpdateContactConfig { updates?: Record<string, unknown>; subscriptionAction: (typeof SUBSCRIPTION_ACTIONS)[number] }
export interface ExitConfig { reason?: string }

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);
const received = (v: unknown) => (v === undefined ? "undefined" : v === null ? null : typeof v === "object" ? (Array.isArray(v) ? "array" : "object") : v);

export interface ConfigResult {
  config: Record<string, unknown>;
  errors: FieldError[];
}

export interface StepConfigOptions {
  /** MAILSVC_ALLOW_PRIVATE_WEBHOOKS: a WEBHOOK step may name localhost. */
  allowPrivateWebhooks?: boolean;
}

/** The host of an http(s) URL when it is written out (no `{{variable}}` in it), else null. */
function literalHost(url: string): string | null {
  const m = /^https?:\/\/(?:[^@/?#]*@)?(\[[^\]]*\]|[^:/?#]*)/i.exec(url);
  if (!m || m[1]!.includes("{{")) return null;
  try {
    // As the URL parser reads it at run time: percent-escapes, case and full-width letters resolved.
    return new URL(`http://${m[1]}/`).hostname;
  } catch {
    return null;
  }
}

/** Validates and normalises a step's config; `errors` empty means valid. */
export function checkStepConfig(type: StepType, raw: unknown, opts: StepConfigOptions = {}): ConfigResult {
  const errors: FieldError[] = [];
  const err = (field: string, message: string, code: string, value?: unknown) =>
    errors.push({ field: field ? `config.${field}` : "config", message, code, received: received(value) });
  if (raw === undefined || raw === null) raw = {};
  if (!isObject(raw)) {
    err("", "config must be an object", "invalid_type", raw);
    return { config: {}, errors };
  }
  const c = raw;
  switch (type) {
    case "SEND_EMAIL": {
      if (typeof c.templateId !== "string" || !c.templateId.trim()) err("templateId", "Required: the id of the template to send", "invalid_type", c.templateId);
      if (c.trackOpens !== undefined && c.trackOpens !== null && typeof c.trackOpens !== "boolean") err("trackOpens", "trackOpens must be true, false or null", "invalid_type", c.trackOpens);
      const config: Record<string, unknown> = { templateId: typeof c.templateId === "string" ? c.templateId.trim() : c.templateId };
      if (c.trackOpens !== undefined) config.trackOpens = c.trackOpens;
      return { config, errors };
    }
    case "DELAY": {
      const amount = c.amount;
      const unit = c.unit;
      if (typeof amount !== "number" || !Number.isFinite(amount) || amount <= 0) err("amount", "Required: a positive number", typeof amount === "number" ? "too_small" : "invalid_type", amount);
      if (typeof unit !== "string" || !(unit in DELAY_UNITS)) err("unit", "Expected one of: minutes, hours, days", unit === undefined ? "invalid_type" : "invalid_enum_value", unit);
      if (!errors.length && (amount as number) * DELAY_UNITS[unit as DelayUnit] > MAX_DELAY_MS) err("amount", "A delay is at most 365 days", "too_big", amount);
      return { config: { amount, unit }, errors };
    }
    case "WAIT_FOR_EVENT": {
      if (typeof c.eventName !== "string" || !c.eventName.trim()) err("eventName", "Required: the event name to wait for", "invalid_type", c.eventName);
      else if (c.eventName.length > 255) err("eventName", "At most 255 characters", "too_big", c.eventName.length);
      const timeout = c.timeout;
      if (timeout !== undefined && timeout !== null) {
        if (typeof timeout !== "number" || !Number.isInteger(timeout) || timeout <= 0) err("timeout", "timeout is a positive whole number of seconds", typeof timeout === "number" ? "too_small" : "invalid_type", timeout);
        else if (timeout * 1000 > MAX_DELAY_MS) err("timeout", "A timeout is at most 365 days", "too_big", timeout);
      }
      const config: Record<string, unknown> = { eventName: typeof c.eventName === "string" ? c.eventName.trim() : c.eventName };
      if (typeof timeout === "number") config.timeout = timeout;
      return { config, errors };
    }
    case "CONDITION": {
      const r = conditionErrors(c);
      errors.push(...r.errors);
      return { config: r.config, errors };
    }
    case "WEBHOOK": {
      if (typeof c.url !== "string" || !c.url.trim()) err("url", "Required: the http(s) URL to call", "invalid_type", c.url);
      else if (!/^https?:\/\/[^\s/?#]+/i.test(c.url.trim())) err("url", "Must be an http:// or https:// URL", "invalid_string", c.url);
      else if (!c.url.includes("{{")) {
        try {
          new URL(c.url.trim());
        } catch {
          err("url", "Must be an http:// or https:// URL", "invalid_string", c.url);
        }
      }
      if (typeof c.url === "string" && !opts.allowPrivateWebhooks && !errors.some((e) => e.field === "config.url")) {
        // As outbound webhook endpoints: localhost names are loopback, refused here rather than at every run.
        const host = literalHost(c.url.trim());
        if (host !== null && isLoopbackName(host)) {
          err("url", `Webhooks may not reach ${host}: loopback, private and link-local addresses are refused (MAILSVC_ALLOW_PRIVATE_WEBHOOKS allows them)`, "refused", c.url);
        }
      }
      const method = c.method === undefined || c.method === null ? "POST" : c.method;
      if (typeof method !== "string" || !(WEBHOOK_METHODS as readonly string[]).includes(method.toUpperCase())) {
        err("method", `Expected one of: ${WEBHOOK_METHODS.join(", ")}`, "invalid_enum_value", method);
      }
      if (c.headers !== undefined && c.headers !== null) {
        if (!isObject(c.headers)) err("headers", "headers must be an object of strings", "invalid_type", c.headers);
        else
          for (const [k, v] of Object.entries(c.headers)) {
            if (!/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(k)) err(`headers.${k}`, "Invalid header name", "invalid_string", k);
            else if (typeof v !== "string") err(`headers.${k}`, "Header values must be strings", "invalid_type", v);
            else if (/[\r\n]/.test(v)) err(`headers.${k}`, "Header values must not contain CR or LF", "invalid_string");
          }
      }
      const config: Record<string, unknown> = { url: typeof c.url === "string" ? c.url.trim() : c.url, method: typeof method === "string" ? method.toUpperCase() : method };
      if (isObject(c.headers)) config.headers = c.headers;
      if (c.body !== undefined) config.body = c.body;
      return { config, errors };
    }
    case "UPDATE_CONTACT": {
      if (c.updates !== undefined && c.updates !== null) {
        if (!isObject(c.updates)) err("updates", "updates must be an object of contact data", "invalid_type", c.updates);
        else errors.push(...dataErrors(c.updates, "config.updates"));
      }
      const action = c.subscriptionAction ?? "none";
      if (typeof action !== "string" || !(SUBSCRIPTION_ACTIONS as readonly string[]).includes(action)) {
        err("subscriptionAction", "Expected one of: none, subscribe, unsubscribe", "invalid_enum_value", action);
      }
      const config: Record<string, unknown> = { subscriptionAction: action };
      if (isObject(c.updates)) config.updates = c.updates;
      return { config, errors };
    }
    case "EXIT": {
      if (c.reason !== undefined && c.reason !== null && (typeof c.reason !== "string" || c.reason.length > 500)) {
        err("reason", "reason is a string of at most 500 characters", typeof c.reason === "string" ? "too_big" : "invalid_type", c.reason);
      }
      return { config: typeof c.reason === "string" ? { reason: c.reason } : {}, errors };
    }
  }
}

export const delayMs = (c: DelayConfig) => Math.round(c.amount * DELAY_UNITS[c.unit]);
