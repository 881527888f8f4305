// nextState: the decision after an attempt, table-driven (no server, no clock, no database).
import { describe, expect, test } from "bun:test";
import { nextState, attemptLabel, type AttemptResult, type AttemptRow, type RetrySchedule } from "../../src/mail/outbox/next-state";
import { bounced, deferred, delivered } from "../../src/mail/smtp/smtp-result";

const NOW = Date.UTC(2026, 10, 24, 12, 0, 0);
const SCHEDULE: RetrySchedule = { now: NOW, delaysMs: [60_000, 300_000], relay: false };
const row = (over: Partial<AttemptRow> = {}): AttemptRow => ({
  id: "e1",
  project_id: "p1",
  contact_id: "c1",
  to_email: "ann@example.com",
  source_type: "TRANSACTIONAL",
  campaign_id: null,
  template_id: null,
  attempts: 0,
  ...over,
});
const withHost = (r: AttemptResult, host: string | null = "mx.example.com"): AttemptResult => ({ ...r, host }) as AttemptResult;

interface Case {
  name: string;
  row: AttemptRow;
  result: AttemptResult;
  schedule?: Partial<RetrySchedule>;
  status: string;
  events: string[];
  attempted: boolean;
  bounce?: boolean;
  nextAttemptAt?: number;
  label?: string;
  host?: string | null;
}

const CASES: Case[] = [
  { name: "delivered, first attempt", row: row(), result: withHost(delivered("250 2.0.0 OK queued")), status: "DELIVERED", events: ["email.sent", "email.delivery"], attempted: true, label: "delivered", host: "mx.example.com" },
  { name: "delivered after a deferral (no second email.sent)", row: row({ attempts: 1 }), result: withHost(delivered("250 OK")), status: "DELIVERED", events: ["email.delivery"], attempted: true, label: "delivered" },
  { name: "relay 250 is SENT, no email.delivery", row: row(), result: withHost(delivered("250 Ok: queued as 42"), "relay.example.net"), schedule: { relay: true }, status: "SENT", events: ["email.sent"], attempted: true, label: "sent", host: "relay.example.net" },
  { name: "deferred with attempts left", row: row(), result: withHost(deferred("451 4.7.1 try later", "rcpt")), status: "DEFERRED", events: ["email.sent", "email.deferred"], attempted: true, nextAttemptAt: NOW + 60_000, label: "deferred" },
  { name: "deferred, second wait of the schedule", row: row({ attempts: 1 }), result: withHost(deferred("421 busy", "greeting")), status: "DEFERRED", events: ["email.deferred"], attempted: true, nextAttemptAt: NOW + 300_000, label: "deferred" },
  { name: "deferred with no attempts left fails", row: row({ attempts: 2 }), result: withHost(deferred("451 still no", "data")), status: "FAILED", events: ["email.failed"], attempted: true, label: "deferred" },
  { name: "empty schedule: the first deferral fails", row: row(), result: withHost(deferred("450 mailbox busy", "rcpt")), schedule: { delaysMs: [] }, status: "FAILED", events: ["email.sent", "email.failed"], attempted: true, label: "deferred" },
  { name: "bounced (5xx at RCPT)", row: row(), result: withHost(bounced("550 5.1.1 user unknown", "rcpt")), status: "BOUNCED", events: ["email.sent", "email.bounce"], attempted: true, bounce: true, label: "bounced" },
  { name: "local error before the wire is a deferral", row: row(), result: { kind: "deferred", code: 0, reply: "local error: DKIM key unreadable", stage: "local", host: null }, status: "DEFERRED", events: ["email.sent", "email.deferred"], attempted: true, nextAttemptAt: NOW + 60_000, host: null },
  { name: "suppressed: never attempted", row: row(), result: { kind: "suppressed", reply: "address is suppressed" }, status: "SUPPRESSED", events: ["email.suppressed"], attempted: false, host: null },
  { name: "its campaign cancelled while it was in flight: cancelled, never attempted, no event", row: row(), result: { kind: "cancelled", reply: "campaign cancelled before this email was sent" }, status: "CANCELLED", events: [], attempted: false, host: null },
  { name: "content missing: failed without an attempt", row: row(), result: { kind: "unsendable", reply: "local error: email content missing" }, status: "FAILED", events: ["email.failed"], attempted: false, host: null },
  { name: "account email (no project, no contact): no events", row: row({ project_id: null, contact_id: null, source_type: "SYSTEM" }), result: withHost(bounced("550 no such user", "rcpt")), status: "BOUNCED", events: [], attempted: true, bounce: true },
  { name: "contact-less project email: no events", row: row({ contact_id: null }), result: withHost(delivered("250 OK")), status: "DELIVERED", events: [], attempted: true },
];

describe("nextState", () => {
  for (const c of CASES) {
    test(c.name, () => {
      const s = nextState(c.row, c.result, { ...SCHEDULE, ...c.schedule });
      expect(s.id).toBe(c.row.id);
      expect(s.status).toBe(c.status as never);
      expect(s.events.map((e) => e.name)).toEqual(c.events);
      expect(s.attempted).toBe(c.attempted);
      expect(s.bounce).toBe(c.bounce ?? false);
      expect(s.nextAttemptAt).toBe(c.nextAttemptAt);
      expect(s.reply).toBe(c.result.reply);
      if (c.label) expect(attemptLabel(s)).toBe(c.label);
      if (c.host !== undefined) expect(s.host).toBe(c.host);
      for (const e of s.events) {
        expect(e).toMatchObject({ projectId: c.row.project_id, contactId: c.row.contact_id, emailId: c.row.id });
        expect(e.data.emailId).toBe(c.row.id);
      }
    });
  }

  test("event data: attempt number, remote reply, next attempt time, campaign and template", () => {
    const r = row({ attempts: 0, campaign_id: "cmp1", template_id: "tpl1", source_type: "CAMPAIGN" });
    const s = nextState(r, withHost(deferred("451 4.7.1 greylisted", "rcpt")), SCHEDULE);
    expect(s.events[0]!.data).toEqual({ emailId: "e1", to: "ann@example.com", sourceType: "CAMPAIGN", campaignId: "cmp1", templateId: "tpl1" });
    expect(s.events[1]!.data).toEqual({
      emailId: "e1",
      to: "ann@example.com",
      campaignId: "cmp1",
      code: 451,
      reply: "451 4.7.1 greylisted",
      attempt: 1,
      mxHost: "mx.example.com",
      nextAttemptAt: new Date(NOW + 60_000).toISOString(),
    });
  });

  test("a reply longer than 1,000 characters is cut", () => {
    const s = nextState(row(), withHost(bounced("550 " + "x".repeat(3000), "data")), SCHEDULE);
    expect(s.reply.length).toBe(1000);
    expect(s.events[1]!.data.reply).toBe(s.reply);
  });
});
