// Race conditions: concurrent bursts of identical or conflicting requests against a real server,
// asserting the contract (decisions.md) still holds: one winner, one fan-out, one email per contact,
// caps charged once, nothing half-written.
//
// A handler's awaits on bun:sqlite are microtasks, so a burst only interleaves between requests when
// the one connection is busy (a checkpoint, a fan-out batch, a job's transaction): then every
// request's queries queue on the store's lock and run alternately. `contended` reproduces that: it
// holds the lock (an open transaction) while the burst arrives, then lets the queue go.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { sendEnv } from "../send/support";
import type { DeliveryEnv } from "../support/delivery";
import { createAccount } from "../support/server";
import { chain } from "../workflows/support";
import { addContacts, campaignBody, RCPT, waitForCampaign } from "../campaigns/support";

let env: DeliveryEnv;
let key: string;
beforeAll(async () => {
  env = await sendEnv();
  key = env.acct.secretKey;
});
afterAll(() => env.close());

const api = (path: string, opts: Parameters<DeliveryEnv["srv"]["api"]>[1] = {}) => env.srv.api(path, { key, ...opts });
const statuses = (rs: { status: number }[]) => rs.map((r) => r.status).sort();

/** Runs `fire` while the database connection is held, then releases it: the burst's queries interleave. */
async function contended<T>(fire: () => Promise<T>): Promise<T> {
  let open!: () => void;
  const gate = new Promise<void>((r) => (open = r));
  const held = env.srv.ctx.db.transaction().execute(() => gate);
  const burst = fire();
  // Long enough for every request of the burst to reach its first query (and wait for the lock).
  await Bun.sleep(30);
  open();
  await held;
  return burst;
}

async function newCampaign(over: Record<string, unknown> = {}) {
  const r = await api("/campaigns", { body: campaignBody(over) });
  if (r.status !== 201) throw new Error(`create campaign: ${r.status} ${r.text}`);
  return r.body.data.id as string;
}

async function emailsOf(campaignId: string) {
  return env.srv.ctx.db.selectFrom("emails").select(["contact_id", "content_id", "status"]).where("campaign_id", "=", campaignId).execute();
}

async function campaignsUsed() {
  const r = await env.srv.api(`/users/@me/projects/${env.acct.projectId}/billing-consumption`, { cookie: env.acct.cookie });
  return r.body.campaigns.used as number;
}

async function contentCount() {
  const r = await env.srv.ctx.db.selectFrom("email_contents").select((eb) => eb.fn.countAll<number>().as("n")).executeTakeFirstOrThrow();
  return Number(r.n);
}

describe("campaigns", () => {
  let contacts: string[];
  beforeAll(async () => {
    contacts = await addContacts(env, [0, 1, 2].map((i) => ({ email: `race${i}@${RCPT}` })));
  });

  async function expectOneFanout(id: string) {
    await env.srv.drainJobs();
    await waitForCampaign(env, id, "SENT");
    const emails = await emailsOf(id);
    expect(emails.length).toBe(contacts.length);
    expect(new Set(emails.map((e) => e.contact_id)).size).toBe(contacts.length);
    return emails;
  }

  test("three sends at once: one 200, two 409 INVALID_STATE, one fan-out, the audience charged once, one content", async () => {
    for (let round = 0; round < 3; round++) {
      const id = await newCampaign({ name: `double send ${round}` });
      const [used, contents] = [await campaignsUsed(), await contentCount()];
      const rs = await contended(() => Promise.all([0, 1, 2].map(() => api(`/campaigns/${id}/send`, { body: {} }))));
      expect(statuses(rs)).toEqual([200, 409, 409]);
      for (const r of rs.filter((r) => r.status === 409)) expect(r.body.error.code).toBe("INVALID_STATE");
      await expectOneFanout(id);
      expect((await campaignsUsed()) - used).toBe(contacts.length);
      expect((await contentCount()) - contents).toBe(1);
    }
  });

  test("send racing a PUT: one wins, the other 409 INVALID_STATE; what is sent is the final content", async () => {
    for (let round = 0; round < 3; round++) {
      const id = await newCampaign({ name: `send+put ${round}`, subject: "Old subject" });
      const [send, put] = await contended(() =>
        Promise.all([api(`/campaigns/${id}/send`, { body: {} }), api(`/campaigns/${id}`, { method: "PUT", body: { subject: "New subject" } })]),
      );
      expect(statuses([send, put])).toEqual([200, 409]);
      const loser = send.status === 409 ? send : put;
      expect(loser.body.error.code).toBe("INVALID_STATE");
      if (send.status === 409) {
        const c = (await api(`/campaigns/${id}`)).body;
        expect(c).toMatchObject({ status: "DRAFT", subject: "New subject" });
        expect(await emailsOf(id)).toEqual([]);
        continue;
      }
      const emails = await expectOneFanout(id);
      const content = await env.srv.ctx.db.selectFrom("email_contents").select("subject").where("id", "=", emails[0]!.content_id).executeTakeFirstOrThrow();
      expect(content.subject).toBe("Old subject");
      expect((await api(`/campaigns/${id}`)).body.subject).toBe("Old subject");
    }
  });

  test("send racing a DELETE: either it is sent (DELETE 409) or gone (send 409/404), never both", async () => {
    for (let round = 0; round < 3; round++) {
      const id = await newCampaign({ name: `send+delete ${round}` });
      const used = await campaignsUsed();
      const [send, del] = await contended(() => Promise.all([api(`/campaigns/${id}/send`, { body: {} }), api(`/campaigns/${id}`, { method: "DELETE" })]));
      const get = await api(`/campaigns/${id}`);
      if (send.status === 200) {
        expect(del.status).toBe(409);
        await expectOneFanout(id);
        expect((await campaignsUsed()) - used).toBe(contacts.length);
      } else {
        expect(del.status).toBeLessThan(300);
        expect(get.status).toBe(404);
        expect(send.body.error.code).toBe("INVALID_STATE");
        expect(await emailsOf(id)).toEqual([]);
        expect(await campaignsUsed()).toBe(used);
      }
    }
  });

  test("schedule and send-now at once: one wins, the other 409; a later start job does nothing", async () => {
    for (let round = 0; round < 3; round++) {
      const id = await newCampaign({ name: `schedule+send ${round}` });
      const at = new Date(env.srv.clock.now() + 3_600_000).toISOString();
      const rs = await contended(() => Promise.all([api(`/campaigns/${id}/send`, { body: {} }), api(`/campaigns/${id}/send`, { body: { scheduledFor: at } })]));
      expect(statuses(rs)).toEqual([200, 409]);
      const c = (await api(`/campaigns/${id}`)).body;
      if (rs[0]!.status === 200) {
        await expectOneFanout(id);
      } else {
        expect(c.status).toBe("SCHEDULED");
        const cancel = await api(`/campaigns/${id}/cancel`, { method: "POST" });
        expect(cancel.status).toBe(200);
      }
    }
  });

  test("cancel racing send of a SCHEDULED campaign: a coherent end state, emails only if SENT", async () => {
    for (let round = 0; round < 3; round++) {
      const id = await newCampaign({ name: `cancel+send ${round}` });
      const at = new Date(env.srv.clock.now() + 3_600_000).toISOString();
      expect((await api(`/campaigns/${id}/send`, { body: { scheduledFor: at } })).status).toBe(200);
      const used = await campaignsUsed();
      const [send, cancel] = await contended(() => Promise.all([api(`/campaigns/${id}/send`, { body: {} }), api(`/campaigns/${id}/cancel`, { method: "POST" })]));
      await env.srv.drainJobs();
      const c = (await api(`/campaigns/${id}`)).body;
      if (send.status === 409) {
        expect(cancel.status).toBe(200);
        expect(c.status).toBe("CANCELLED");
        expect(await emailsOf(id)).toEqual([]);
        expect(await campaignsUsed()).toBe(used);
      } else {
        expect(send.status).toBe(200);
        expect(["CANCELLED", "SENT"]).toContain(c.status);
        if (c.status === "SENT") expect(cancel.status).toBe(409);
      }
    }
  });
});

describe("segments", () => {
  const cond = (plan: string) => ({ logic: "AND", groups: [{ filters: [{ field: "data.plan", operator: "equals", value: plan }] }] });
  let n = 0;
  async function newSegment(body: Record<string, unknown>) {
    const r = await api("/segments", { body: { name: `seg ${++n}`, ...body } });
    if (r.status !== 201) throw new Error(`create segment: ${r.status} ${r.text}`);
    return r.body as { id: string; slug: string };
  }
  const entryEvents = async (slug: string) =>
    (await env.srv.ctx.db.selectFrom("events").select("id").where("project_id", "=", env.acct.projectId).where("name", "=", `segment.${slug}.entry`).execute()).length;
  const stored = async (id: string) => (await env.srv.ctx.db.selectFrom("segment_members").select("contact_id").where("segment_id", "=", id).execute()).length;

  beforeAll(async () => {
    await addContacts(env, [0, 1, 2].map((i) => ({ email: `seg${i}@${RCPT}`, data: { plan: i === 0 ? "pro" : "free" } })));
  });

  test("two PATCHes of different fields at once: both changes are kept", async () => {
    for (let round = 0; round < 3; round++) {
      const s = await newSegment({ condition: cond("pro") });
      const rs = await contended(() =>
        Promise.all([api(`/segments/${s.id}`, { method: "PATCH", body: { description: `d${round}` } }), api(`/segments/${s.id}`, { method: "PATCH", body: { name: `renamed ${round}` } })]),
      );
      expect(statuses(rs)).toEqual([200, 200]);
      expect((await api(`/segments/${s.id}`)).body).toMatchObject({ name: `renamed ${round}`, description: `d${round}` });
    }
  });

  test("compute racing PATCH trackMembership:false: no stored membership is left on the untracked segment", async () => {
    for (let round = 0; round < 3; round++) {
      const s = await newSegment({ condition: cond("free"), trackMembership: true });
      const [patch, compute] = await contended(() =>
        Promise.all([api(`/segments/${s.id}`, { method: "PATCH", body: { trackMembership: false } }), api(`/segments/${s.id}/compute`, { method: "POST" })]),
      );
      expect(statuses([patch, compute])).toEqual([200, 200]);
      expect(await stored(s.id)).toBe(0);
      expect(await entryEvents(s.slug)).toBe(compute.body.added);
      // Tracking again starts empty: the next compute enters every matching contact once.
      expect((await api(`/segments/${s.id}`, { method: "PATCH", body: { trackMembership: true } })).status).toBe(200);
      const again = await api(`/segments/${s.id}/compute`, { method: "POST" });
      expect(again.body.added).toBe(again.body.total);
    }
  });

  test("compute racing DELETE: no entry events for a deleted segment (compute 404)", async () => {
    for (let round = 0; round < 3; round++) {
      const s = await newSegment({ condition: cond("free"), trackMembership: true });
      const [del, compute] = await contended(() => Promise.all([api(`/segments/${s.id}`, { method: "DELETE" }), api(`/segments/${s.id}/compute`, { method: "POST" })]));
      expect(del.status).toBe(200);
      expect(compute.status).toBe(404);
      expect(await entryEvents(s.slug)).toBe(0);
    }
  });

  test("three computes of one tracked segment at once: one entry per contact", async () => {
    const s = await newSegment({ condition: cond("free"), trackMembership: true });
    const rs = await contended(() => Promise.all([0, 1, 2].map(() => api(`/segments/${s.id}/compute`, { method: "POST" }))));
    expect(rs.map((r) => r.body.added).reduce((a, b) => a + b, 0)).toBe(rs[0]!.body.total);
    expect(await entryEvents(s.slug)).toBe(rs[0]!.body.total);
  });

  test("three creates with one name at once: slugs x, x-2, x-3", async () => {
    const rs = await contended(() => Promise.all([0, 1, 2].map(() => api("/segments", { body: { name: "Same Name", type: "STATIC" } }))));
    expect(statuses(rs)).toEqual([201, 201, 201]);
    expect(rs.map((r) => r.body.slug).sort()).toEqual(["same-name", "same-name-2", "same-name-3"]);
  });

  test("three STATIC member adds with createMissing at once: each contact created and added once", async () => {
    const s = await newSegment({ type: "STATIC" });
    const emails = [`fresh-a@${RCPT}`, `fresh-b@${RCPT}`, `seg0@${RCPT}`];
    const rs = await contended(() => Promise.all([0, 1, 2].map(() => api(`/segments/${s.id}/members`, { body: { emails, createMissing: true } }))));
    expect(statuses(rs)).toEqual([200, 200, 200]);
    expect(rs.map((r) => r.body.added).reduce((a, b) => a + b, 0)).toBe(3);
    expect(rs.map((r) => r.body.created).reduce((a, b) => a + b, 0)).toBe(2);
    expect(await stored(s.id)).toBe(3);
  });

  test("DELETE of a segment racing the send of a campaign to it: never SENDING to a deleted segment", async () => {
    for (let round = 0; round < 3; round++) {
      const s = await newSegment({ condition: cond("free") });
      const id = await newCampaign({ name: `seg send ${round}`, audienceType: "SEGMENT", segmentId: s.id });
      const [send, del] = await contended(() => Promise.all([api(`/campaigns/${id}/send`, { body: {} }), api(`/segments/${s.id}`, { method: "DELETE" })]));
      const seg = await api(`/segments/${s.id}`);
      if (send.status === 200) {
        expect(del.status).toBe(409);
        expect(seg.status).toBe(200);
      } else {
        expect(del.status).toBe(200);
        expect((await api(`/campaigns/${id}`)).body.status).toBe("DRAFT");
      }
    }
  });
});

describe("project members", () => {
  test("the last two owners leaving (or demoting each other) at once: one 409 INVALID_STATE, one owner left", async () => {
    for (const mode of ["leave", "demote", "leave", "demote"] as const) {
      const a = await createAccount(env.srv.api, "owners race");
      const b = await createAccount(env.srv.api);
      const inv = await env.srv.api(`/projects/${a.projectId}/members`, { cookie: a.cookie, body: { email: b.email, role: "OWNER" } });
      expect(inv.status).toBe(201);
      const act = (me: typeof a, other: typeof a) =>
        mode === "leave"
          ? env.srv.api(`/projects/${a.projectId}/members/${me.userId}`, { method: "DELETE", cookie: me.cookie })
          : env.srv.api(`/projects/${a.projectId}/members/${other.userId}`, { method: "PATCH", cookie: me.cookie, body: { role: "MEMBER" } });
      const rs = await contended(() => Promise.all([act(a, b), act(b, a)]));
      expect(statuses(rs)).toEqual([200, 409]);
      expect(rs.find((r) => r.status === 409)!.body.error.code).toBe("INVALID_STATE");
      const owners = await env.srv.ctx.db.selectFrom("project_members").select("user_id").where("project_id", "=", a.projectId).where("role", "=", "OWNER").execute();
      expect(owners.length).toBe(1);
    }
  });
});

describe("workflows", () => {
  const c = () => ({ api: env.srv.api, key });
  const executionsOf = async (wf: string) =>
    env.srv.ctx.db.selectFrom("workflow_executions").select(["contact_id", "status"]).where("workflow_id", "=", wf).execute();

  test("three manual starts for one contact at once (allowReentry false, then true): one 201, two 409", async () => {
    for (const allowReentry of [false, true]) {
      const wf = await chain(c(), [["DELAY", { amount: 1, unit: "days" }]], { allowReentry });
      const email = `wf-${allowReentry}@${RCPT}`;
      await addContacts(env, [{ email }]);
      const rs = await contended(() => Promise.all([0, 1, 2].map(() => api(`/workflows/${wf.id}/executions`, { body: { email } }))));
      expect(statuses(rs)).toEqual([201, 409, 409]);
      expect((await executionsOf(wf.id)).length).toBe(1);
    }
  });

  test("three /v1/track of one new email at once with an EVENT workflow: one contact, one execution", async () => {
    for (const allowReentry of [false, true]) {
      const event = `race-signup-${allowReentry}`;
      const wf = await chain(c(), [["DELAY", { amount: 1, unit: "days" }]], { eventName: event, allowReentry });
      const email = `track-${allowReentry}@${RCPT}`;
      const rs = await contended(() => Promise.all([0, 1, 2].map(() => env.srv.api("/v1/track", { key: env.acct.publicKey, body: { email, event } }))));
      expect(statuses(rs)).toEqual([200, 200, 200]);
      await env.srv.drainJobs();
      const contacts = await env.srv.ctx.db.selectFrom("contacts").select("id").where("project_id", "=", env.acct.projectId).where("email", "=", email).execute();
      expect(contacts.length).toBe(1);
      const active = (await executionsOf(wf.id)).filter((e) => e.status === "RUNNING" || e.status === "WAITING");
      expect(active.length).toBe(1);
    }
  });
});

describe("contacts and domains", () => {
  test("two PATCHes moving two contacts to one new email at once: one 200, one 409", async () => {
    const [a, b] = await addContacts(env, [{ email: `move-a@${RCPT}` }, { email: `move-b@${RCPT}` }]);
    const rs = await contended(() =>
      Promise.all([a, b].map((id) => api(`/contacts/${id}`, { method: "PATCH", body: { email: `moved@${RCPT}` } }))),
    );
    expect(statuses(rs)).toEqual([200, 409]);
  });

  test("three POST /domains of one domain at once: one 201, two 409", async () => {
    const rs = await Promise.all([0, 1, 2].map(() => api("/domains", { body: { domain: "race-domain.test" } })));
    expect(statuses(rs)).toEqual([201, 409, 409]);
  });
});
