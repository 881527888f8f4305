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
import { items } from "../support/api";
import { createAccount } from "../support/server";
import { chain } from "../workflows/support";
import { addContacts, campaignBody, RCPT, SENDER, waitForCampaign } from "../campaigns/support";

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
        // SQLite serializes the burst in the order it was fired: the send's checks queue behind the cancel's
        // transaction and find it CANCELLED (the branch above). On PostgreSQL the send may commit first; then the
        // cancel's answer says which serialization followed: 200, it stopped the sending campaign; 409, too late.
        expect(env.srv.ctx.store.engine).toBe("postgres");
        expect(send.status).toBe(200);
        expect(c.status).toBe(cancel.status === 200 ? "CANCELLED" : "SENT");
        if (cancel.status !== 200) expect(cancel.status).toBe(409);
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
      // SQLite serializes the burst in the order it was fired (the DELETE's transaction first): compute
      // then finds no segment. On PostgreSQL reads run in parallel and the two transactions may commit
      // in either order; whichever order they took, the outcome must be that serialization's exactly.
      if (env.srv.ctx.store.engine === "sqlite" || compute.status === 404) {
        expect(compute.status).toBe(404);
        expect(await entryEvents(s.slug)).toBe(0);
      } else {
        // compute committed before the DELETE: its entries are those of a segment that still existed.
        expect(compute.status).toBe(200);
        expect(await entryEvents(s.slug)).toBe(compute.body.added);
      }
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

describe("idempotency, imports, bulk jobs, duplicates, members", () => {
  const countRows = async (table: "emails" | "events", col: "to_email" | "name", value: string) =>
    (await env.srv.ctx.db.selectFrom(table).select("id").where(col as never, "=", value as never).execute()).length;

  test("three /v1/send with one Idempotency-Key at once: one 200, two 409 IDEMPOTENCY_KEY_REUSED, one email", async () => {
    for (let round = 0; round < 3; round++) {
      const to = `idem-send-${round}@${RCPT}`;
      const body = { to, from: `news@${SENDER}`, subject: "Once", body: "<p>once</p>" };
      const rs = await contended(() => Promise.all([0, 1, 2].map(() => api("/v1/send", { body, headers: { "idempotency-key": `race-send-${round}` } }))));
      expect(statuses(rs)).toEqual([200, 409, 409]);
      for (const r of rs.filter((r) => r.status === 409)) expect(r.body.error.code).toBe("IDEMPOTENCY_KEY_REUSED");
      expect(await countRows("emails", "to_email", to)).toBe(1);
    }
  });

  test("three /v1/track with one Idempotency-Key at once: one 200, two 409 IDEMPOTENCY_KEY_REUSED, one event", async () => {
    for (let round = 0; round < 3; round++) {
      const event = `idem-track-${round}`;
      const body = { email: `idem-track-${round}@${RCPT}`, event };
      const rs = await contended(() =>
        Promise.all([0, 1, 2].map(() => env.srv.api("/v1/track", { key: env.acct.publicKey, body, headers: { "idempotency-key": `race-track-${round}` } }))),
      );
      expect(statuses(rs)).toEqual([200, 409, 409]);
      for (const r of rs.filter((r) => r.status === 409)) expect(r.body.error.code).toBe("IDEMPOTENCY_KEY_REUSED");
      await env.srv.drainJobs();
      expect(await countRows("events", "name", event)).toBe(1);
    }
  });

  const importCsv = (csv: string) => {
    const form = new FormData();
    form.append("file", new Blob([csv], { type: "text/csv" }), "contacts.csv");
    return api("/contacts/import", { method: "POST", raw: form });
  };
  const jobResult = async (path: string) => {
    await env.srv.drainJobs();
    const r = await api(path);
    expect(r.status).toBe(200);
    expect(r.body.state).toBe("completed");
    return r.body.result as { total: number; succeeded: number; created: number; updated: number; failed: number };
  };
  const contactsLike = async (prefix: string) =>
    env.srv.ctx.db.selectFrom("contacts").select(["id", "email"]).where("project_id", "=", env.acct.projectId).where("email", "like", `${prefix}%`).execute();

  test("two overlapping CSV imports at once: every address one contact, created/updated add up", async () => {
    for (let round = 0; round < 2; round++) {
      const p = `imp${round}-`;
      // 1,500 rows each (two chunks), 1,000 addresses shared.
      const a = ["email,plan", ...Array.from({ length: 1500 }, (_, i) => `${p}${i}@${RCPT},a`)].join("\n");
      const b = ["email,plan", ...Array.from({ length: 1500 }, (_, i) => `${p}${i + 500}@${RCPT},b`)].join("\n");
      const rs = await contended(() => Promise.all([importCsv(a), importCsv(b)]));
      expect(statuses(rs)).toEqual([202, 202]);
      const [ra, rb] = [await jobResult(`/contacts/import/${rs[0]!.body.jobId}`), await jobResult(`/contacts/import/${rs[1]!.body.jobId}`)];
      for (const r of [ra, rb]) {
        expect(r).toMatchObject({ total: 1500, succeeded: 1500, failed: 0 });
        expect(r.created + r.updated).toBe(1500);
      }
      expect(ra.created + rb.created).toBe(2000);
      expect(ra.updated + rb.updated).toBe(1000);
      const rows = await contactsLike(p);
      expect(rows.length).toBe(2000);
      expect(new Set(rows.map((r) => r.email)).size).toBe(2000);
    }
  });

  test("bulk subscribe, unsubscribe and delete of overlapping ids at once, racing a PATCH: no resurrection, no 500", async () => {
    for (let round = 0; round < 3; round++) {
      const ids = await addContacts(env, Array.from({ length: 6 }, (_, i) => ({ email: `bulk${round}-${i}@${RCPT}` })));
      // The job loop is paused while the burst arrives (its jobs run below, by drainJobs): whether a PATCH of a
      // contact a delete job removes finds it is then decided by the order of the requests, not by the loop's timing.
      await env.srv.ctx.jobs.stop();
      let del, sub, unsub;
      try {
        let patch;
        [del, sub, unsub, patch] = await contended(() =>
          Promise.all([
            api("/contacts/bulk-delete", { body: { contactIds: ids.slice(0, 4) } }),
            api("/contacts/bulk-subscribe", { body: { contactIds: ids.slice(2) } }),
            api("/contacts/bulk-unsubscribe", { body: { contactIds: ids.slice(1, 5) } }),
            api(`/contacts/${ids[1]}`, { method: "PATCH", body: { data: { plan: "patched" } } }),
          ]),
        );
        expect(statuses([del, sub, unsub])).toEqual([202, 202, 202]);
        // The bulk requests only queue their jobs: the contact still exists when the PATCH runs.
        expect(patch.status).toBe(200);
        // Another PATCH of a contact the queued delete will remove, before the jobs run, does not save it; the
        // jobs themselves run concurrently (queue concurrency); a PATCH after them finds the contact gone.
        expect((await api(`/contacts/${ids[0]}`, { method: "PATCH", body: { subscribed: false } })).status).toBe(200);
        await env.srv.drainJobs();
      } finally {
        await env.srv.ctx.jobs.start();
      }
      expect((await api(`/contacts/${ids[0]}`, { method: "PATCH", body: { subscribed: true } })).status).toBe(404);
      const results = await Promise.all([del, sub, unsub].map((r) => jobResult(`/contacts/bulk/${r.body.jobId}`)));
      for (const r of results) expect(r.succeeded + r.failed).toBe(r.total);
      expect(results[0]!.succeeded).toBe(4);
      const left = (await env.srv.ctx.db.selectFrom("contacts").select("id").where("id", "in", ids).execute()).map((r) => r.id).sort();
      expect(left).toEqual(ids.slice(4).sort());
      for (const id of ids.slice(0, 4)) expect((await api(`/contacts/${id}`)).status).toBe(404);
    }
  });

  /**
   * The answer a duplicate racing the DELETE of its original must have given. The duplicate reads the original once
   * and the DELETE checks its usage first, so on SQLite (the burst serialized in the order it was fired, each request
   * alternating at its queries) the duplicate's read always comes first: 201. On PostgreSQL the two run in parallel
   * and the serialization that happened is read back: a stored copy means the read came first (201), none means 404.
   */
  async function duplicateOutcome(list: "/templates" | "/campaigns", copyName: string) {
    if (env.srv.ctx.store.engine === "sqlite") return 201;
    const rows = items((await api(`${list}?search=${encodeURIComponent(copyName)}&limit=100`)).body);
    return rows.some((r) => r.name === copyName) ? 201 : 404;
  }

  test("template duplicate racing DELETE of the original: 404 or a complete copy", async () => {
    for (let round = 0; round < 3; round++) {
      const t = await api("/templates", { body: { name: `dup tpl ${round}`, subject: "S", body: "<p>B</p>", from: `news@${SENDER}` } });
      expect(t.status).toBe(201);
      const dupIt = () => api(`/templates/${t.body.id}/duplicate`, { method: "POST" });
      const delIt = () => api(`/templates/${t.body.id}`, { method: "DELETE" });
      const [dup, del] = await contended(() => (round % 2 ? Promise.all([dupIt(), delIt()]) : Promise.all([delIt(), dupIt()]).then(([d, c]) => [c, d] as const)));
      expect(del.status).toBeLessThan(300);
      expect(dup.status).toBe(await duplicateOutcome("/templates", `dup tpl ${round} (copy)`));
      if (dup.status === 201) {
        const copy = await api(`/templates/${dup.body.id}`);
        expect(copy.status).toBe(200);
        expect(copy.body).toMatchObject({ name: `dup tpl ${round} (copy)`, subject: "S", body: "<p>B</p>" });
      }
    }
  });

  test("campaign duplicate racing DELETE of the original: 404 or a complete DRAFT copy", async () => {
    for (let round = 0; round < 3; round++) {
      const id = await newCampaign({ name: `dup camp ${round}` });
      const dupIt = () => api(`/campaigns/${id}/duplicate`, { method: "POST" });
      const delIt = () => api(`/campaigns/${id}`, { method: "DELETE" });
      const [dup, del] = await contended(() => (round % 2 ? Promise.all([dupIt(), delIt()]) : Promise.all([delIt(), dupIt()]).then(([d, c]) => [c, d] as const)));
      expect(del.status).toBeLessThan(300);
      expect(dup.status).toBe(await duplicateOutcome("/campaigns", `dup camp ${round} (copy)`));
      if (dup.status === 201) {
        const copy = await api(`/campaigns/${dup.body.id}`);
        expect(copy.status).toBe(200);
        expect(copy.body).toMatchObject({ name: `dup camp ${round} (copy)`, status: "DRAFT", subject: campaignBody().subject, body: campaignBody().body });
      }
    }
  });

  test("POST /campaigns/:id/test and /send at once: both 200, one test email, one fan-out", async () => {
    // A small STATIC audience: the project holds thousands of imported contacts by now.
    const seg = await api("/segments", { body: { name: "test+send audience", type: "STATIC" } });
    expect((await api(`/segments/${seg.body.id}/members`, { body: { emails: [`ts-a@${RCPT}`, `ts-b@${RCPT}`], createMissing: true } })).status).toBe(200);
    for (let round = 0; round < 2; round++) {
      const id = await newCampaign({ name: `test+send ${round}`, audienceType: "SEGMENT", segmentId: seg.body.id });
      const to = `tester-${round}@${RCPT}`;
      const [t, send] = await contended(() => Promise.all([api(`/campaigns/${id}/test`, { body: { email: to } }), api(`/campaigns/${id}/send`, { body: {} })]));
      expect(statuses([t, send])).toEqual([200, 200]);
      await env.srv.drainJobs();
      await waitForCampaign(env, id, "SENT");
      expect(await countRows("emails", "to_email", to)).toBe(1);
      const emails = await emailsOf(id);
      expect(new Set(emails.map((e) => e.contact_id)).size).toBe(emails.length);
      expect(emails.length).toBe(2);
    }
  });

  test("POST /segments/:id/members racing DELETE of the segment: 200 or 404, never 500, nothing left behind", async () => {
    for (let round = 0; round < 3; round++) {
      for (const trackMembership of [false, true]) {
        const s = await api("/segments", { body: { name: `members+delete ${round} ${trackMembership}`, type: "STATIC", trackMembership } });
        expect(s.status).toBe(201);
        const fresh = `mem-del-${round}-${trackMembership}@${RCPT}`;
        const addIt = () => api(`/segments/${s.body.id}/members`, { body: { emails: [fresh, `seg1@${RCPT}`], createMissing: true } });
        const remove = () => api(`/segments/${s.body.id}`, { method: "DELETE" });
        // Both orders: the DELETE's transaction committing between the add's read and its transaction is the race.
        const [add, del] = await contended(async () => (round % 2 ? Promise.all([addIt(), remove()]) : Promise.all([remove(), addIt()]).then(([d, a]) => [a, d])));
        expect(del.status).toBe(200);
        expect((await api(`/segments/${s.body.id}`)).status).toBe(404);
        // A refused add creates nothing (the contacts of createMissing go with it): the contact's existence tells
        // which serialization happened. SQLite runs the burst in the order it was fired: the add first (odd rounds)
        // succeeds, the DELETE first refuses it. On PostgreSQL either may commit first; the answer must match it.
        const created = await env.srv.ctx.db.selectFrom("contacts").select("id").where("project_id", "=", env.acct.projectId).where("email", "=", fresh).execute();
        if (env.srv.ctx.store.engine === "sqlite") expect(created.length).toBe(round % 2);
        expect(add.status).toBe(created.length === 1 ? 200 : 404);
        const members = await env.srv.ctx.db.selectFrom("segment_members").select("contact_id").where("segment_id", "=", s.body.id).execute();
        expect(members).toEqual([]);
      }
    }
  });
});
