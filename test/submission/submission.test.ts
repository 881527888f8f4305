// SMTP submission end to end: nodemailer's SMTP transport (and smtp-connection for the protocol
// cases) against MAILSVC_SUBMISSION_PORT; the sink is every recipient's MX.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { checkSubmission } from "../../src/doctor";
import { authenticate, isLoopback } from "../../src/modules/submission/auth";
import { MAX_MESSAGE_BYTES } from "../../src/modules/send/service";
import { addVerifiedDomain } from "../domains/support";
import { hrefs, imgs, rawHeader } from "../blackbox/support";
import { RCPT, SENDER, emailView, verifyDkim, waitForView } from "../send/support";
import { lastMessageFor } from "../support/delivery";
import { startDns } from "../support/dns";
import { createAccount, freeTcpPort, makeApi, spawnServer, type Account, type SpawnedServer } from "../support/server";
import { startSmtpSink } from "../support/smtp-sink";
import { waitFor } from "../support/wait";
import { ehloLines } from "../support/smtp-client";
import { connect, dialog, externalIpv4, rawMessage, submissionEnv, transport, type SubmissionEnv } from "./support";

setDefaultTimeout(30_000);

let env: SubmissionEnv;
const external = externalIpv4();
beforeAll(async () => {
  // 0.0.0.0: the listener is reachable on a non-loopback address of this machine too (AUTH without TLS from there is refused).
  env = await submissionEnv({ host: external ? "0.0.0.0" : "127.0.0.1" });
});
afterAll(() => env.close());

const from = `App <app@${SENDER}>`;

/** The email rows of a project for one recipient, newest last. */
const emailsTo = (projectId: string, to: string) =>
  env.srv.ctx.db.selectFrom("emails").selectAll().where("project_id", "=", projectId).where("to_email", "=", to).orderBy("id").execute();

describe("a message through nodemailer's SMTP transport", () => {
  test("text, HTML, attachment, Reply-To, Cc and Bcc: one DKIM-signed message per recipient, Bcc removed, the rest kept; sourceType SMTP", async () => {
    const t = transport(env, env.acct.secretKey);
    const pdf = Buffer.from("%PDF-1.4 fake invoice \x00\x01\x02", "binary");
    const info = await t.sendMail({
      from,
      to: `Ann Reader <ann@${RCPT}>`,
      cc: `cc@${RCPT}`,
      bcc: `hidden@${RCPT}`,
      replyTo: `support@${SENDER}`,
      subject: "Order {{42}} shipped – ünïcode",
      text: "Your order {{42}} shipped.\nTrack it at https://shop.example/track/42",
      html: `<p>Your order {{42}} shipped.</p><p><a href="https://shop.example/track/42">Track it</a></p>`,
      attachments: [{ filename: "invoice.pdf", content: pdf, contentType: "application/pdf" }],
      headers: { "X-App-Ref": "order-42", "In-Reply-To": "<thread-1@shop.example>" },
    });
    t.close();
    const rcpts = [`ann@${RCPT}`, `cc@${RCPT}`, `hidden@${RCPT}`];
    expect(info.accepted).toEqual(rcpts);
    expect(info.response).toMatch(/^250 2\.0\.0 Ok: queued as [0-9a-f-]{36} and 2 more$/);
    const firstId = /queued as ([0-9a-f-]{36})/.exec(info.response)![1]!;

    for (const rcpt of rcpts) {
      const [row] = await emailsTo(env.acct.projectId, rcpt);
      expect(row!.source_type).toBe("SMTP");
      const view = await waitForView(env.srv, env.acct.secretKey, row!.id, "DELIVERED");
      expect(view).toMatchObject({ to: rcpt, sourceType: "SMTP", subject: "Order {{42}} shipped – ünïcode" });
    }
    expect((await emailView(env.srv, env.acct.secretKey, firstId)).to).toBe(`ann@${RCPT}`);

    for (const rcpt of rcpts) {
      const copies = env.sink.byRecipient(rcpt);
      expect(copies).toHaveLength(1);
      const m = copies[0]!;
      expect(m.to).toEqual([rcpt]);
      const p = await m.parse();
      expect(p.subject).toBe("Order {{42}} shipped – ünïcode");
      expect(p.from!.value).toEqual([{ address: `app@${SENDER}`, name: "App" }]);
      // Each copy is addressed to its recipient, with the display name the To header gave it.
      expect(p.to && !Array.isArray(p.to) ? p.to.value : null).toEqual([{ address: rcpt, name: rcpt.startsWith("ann@") ? "Ann Reader" : "" }]);
      expect(p.cc && !Array.isArray(p.cc) ? p.cc.text : null).toBe(`cc@${RCPT}`);
      expect(p.replyTo!.value).toEqual([{ address: `support@${SENDER}`, name: "" }]);
      expect(p.text!.trim()).toBe("Your order {{42}} shipped.\nTrack it at https://shop.example/track/42");
      expect(p.html).toContain("<p>Your order {{42}} shipped.</p>");
      // New projects track marketing mail only: the transactional link is left alone, no pixel.
      expect(hrefs(p.html as string)).toEqual(["https://shop.example/track/42"]);
      expect(imgs(p.html as string)).toEqual([]);
      expect(p.attachments.map((a) => ({ filename: a.filename, contentType: a.contentType, content: a.content.toString("binary") }))).toEqual([
        { filename: "invoice.pdf", contentType: "application/pdf", content: pdf.toString("binary") },
      ]);
      expect(rawHeader(m, "X-App-Ref")).toBe("order-42");
      expect(rawHeader(m, "In-Reply-To")).toBe("<thread-1@shop.example>");
      expect(rawHeader(m, "Bcc")).toBeUndefined();
      if (rcpt !== `hidden@${RCPT}`) expect(m.raw.toString("latin1")).not.toContain("hidden@");
      // Our DKIM signature, valid for the sender domain.
      const dkim = await verifyDkim(env, m.raw);
      expect(dkim.map((r) => [r.signingDomain, r.status.result])).toEqual([[SENDER, "pass"]]);
    }
  });

  test("a Bcc header the client wrote itself is removed; the Bcc recipient still gets the message", async () => {
    const c = await connect(env.port, { tls: true, ca: env.ca.caPem });
    expect(await c.login("anything", env.acct.secretKey)).toBeNull();
    const raw = rawMessage({ From: `app@${SENDER}`, To: `vis@${RCPT}`, Bcc: `secret@${RCPT}`, Subject: "Bcc test" }, "Body");
    const r = await c.send({ from: `app@${SENDER}`, to: [`vis@${RCPT}`, `secret@${RCPT}`] }, raw);
    c.close();
    expect(r.ok).toBe(true);
    for (const rcpt of [`vis@${RCPT}`, `secret@${RCPT}`]) {
      const m = await lastMessageFor(env, rcpt);
      expect(rawHeader(m, "Bcc")).toBeUndefined();
      expect((await m.parse()).text!.trim()).toBe("Body");
    }
    expect(env.sink.byRecipient(`vis@${RCPT}`)[0]!.raw.toString("latin1")).not.toContain("secret@");
  });

  test("a bare cron-style message (no From, no Subject, no MIME headers): From from the envelope, empty subject, the text as written", async () => {
    const c = await connect(env.port, { tls: false });
    expect(await c.login("cron", env.acct.secretKey)).toBeNull();
    const r = await c.send({ from: `cron@${SENDER}`, to: [`ops@${RCPT}`] }, "To: ops@" + RCPT + "\r\n\r\nBackup done: {{ok}}\r\n.dotfile kept\r\n");
    c.close();
    expect(r.ok).toBe(true);
    const p = await (await lastMessageFor(env, `ops@${RCPT}`)).parse();
    expect(p.from!.value).toEqual([{ address: `cron@${SENDER}`, name: "" }]);
    expect(p.subject ?? "").toBe("");
    expect(p.text!.trim()).toBe("Backup done: {{ok}}\n.dotfile kept");
  });

  test("a text-only message gets an HTML part of its text; a project with tracking ENABLED tracks its links", async () => {
    const patch = await env.srv.api(`/users/@me/projects/${env.acct.projectId}`, { method: "PATCH", cookie: env.acct.cookie, body: { tracking: "ENABLED" } });
    expect(patch.status).toBe(200);
    try {
      const t = transport(env, env.acct.secretKey);
      await t.sendMail({ from, to: `plain@${RCPT}`, subject: "Plain", text: "Line one <b>not bold</b>\nSee https://shop.example/a?x=1&y=2 now." });
      t.close();
      const m = await lastMessageFor(env, `plain@${RCPT}`);
      const p = await m.parse();
      expect(p.text!.trim()).toBe("Line one <b>not bold</b>\nSee https://shop.example/a?x=1&y=2 now.");
      expect(p.html).toContain("Line one &lt;b&gt;not bold&lt;/b&gt;");
      const links = hrefs(p.html as string);
      expect(links).toHaveLength(1);
      expect(links[0]!.startsWith(`${env.srv.ctx.config.publicUrl}/t/c/`)).toBe(true);
      expect(imgs(p.html as string).some((s) => s.startsWith(`${env.srv.ctx.config.publicUrl}/t/o/`))).toBe(true);
    } finally {
      await env.srv.api(`/users/@me/projects/${env.acct.projectId}`, { method: "PATCH", cookie: env.acct.cookie, body: { tracking: "MARKETING_ONLY" } });
    }
  });

  test("the implicit-TLS port with AUTH LOGIN (WordPress/Ghost-style settings: port 465, SSL)", async () => {
    const t = transport(env, env.acct.secretKey, { implicitTls: true, authMethod: "LOGIN" });
    const info = await t.sendMail({ from, to: `tls@${RCPT}`, subject: "Over TLS", html: "<p>secure</p>" });
    t.close();
    expect(info.response).toMatch(/^250 2\.0\.0 Ok: queued as [0-9a-f-]{36}$/);
    const m = await lastMessageFor(env, `tls@${RCPT}`);
    expect(String((await m.parse()).html).trim()).toBe("<p>secure</p>");
  });
});

describe("refusals", () => {
  test("MAIL FROM before AUTH: 530 5.7.0", async () => {
    const c = await connect(env.port, { tls: true, ca: env.ca.caPem });
    const r = await c.send({ from: `app@${SENDER}`, to: [`x@${RCPT}`] }, rawMessage({ From: `app@${SENDER}`, Subject: "x" }));
    c.close();
    expect(r).toMatchObject({ ok: false, responseCode: 530, response: "530 5.7.0 Authentication required" });
  });

  test("unverified From domain: 550 5.7.1, nothing queued", async () => {
    const t = transport(env, env.acct.secretKey);
    const err = await t.sendMail({ from: "me@unverified.test", to: `u1@${RCPT}`, subject: "s", text: "t" }).then(() => null, (e) => e);
    t.close();
    expect(err.responseCode).toBe(550);
    expect(err.response).toBe('550 5.7.1 The sender domain "unverified.test" is not verified for this project');
    expect(await emailsTo(env.acct.projectId, `u1@${RCPT}`)).toEqual([]);
  });

  test("over the transactional cap: 452 4.3.1 and nothing queued", async () => {
    const a = await createAccount(env.srv.api);
    await addVerifiedDomain(env.srv.api, env.dns, a, "cap.sender.test");
    const limits = `/users/@me/projects/${a.projectId}/billing-limits`;
    expect((await env.srv.api(limits, { method: "PUT", cookie: a.cookie, body: { transactional: 2 } })).status).toBe(200);
    const t = transport(env, a.secretKey);
    await t.sendMail({ from: "x@cap.sender.test", to: `cap1@${RCPT}`, subject: "s", text: "t" });
    const err = await t.sendMail({ from: "x@cap.sender.test", to: [`cap2@${RCPT}`, `cap3@${RCPT}`], subject: "s", text: "t" }).then(() => null, (e) => e);
    t.close();
    expect(err.responseCode).toBe(452);
    expect(err.response).toBe("452 4.3.1 The monthly transactional limit of 2 is reached (1 used, 2 requested)");
    const rows = await env.srv.ctx.db.selectFrom("emails").select("to_email").where("project_id", "=", a.projectId).execute();
    expect(rows.map((r) => r.to_email)).toEqual([`cap1@${RCPT}`]);
    expect((await env.srv.api(`/users/@me/projects/${a.projectId}/billing-consumption`, { cookie: a.cookie })).body.transactional).toMatchObject({ used: 1, limit: 2 });
  });

  test("51 recipients: the 51st is refused 452 4.5.3, the message goes to the other 50", async () => {
    const c = await connect(env.port, { tls: true, ca: env.ca.caPem });
    expect(await c.login("app", env.acct.secretKey)).toBeNull();
    const to = Array.from({ length: 51 }, (_, i) => `many${i}@${RCPT}`);
    const r = await c.send({ from: `app@${SENDER}`, to }, rawMessage({ From: `app@${SENDER}`, To: "undisclosed-recipients:;", Subject: "Many" }));
    c.close();
    if (!r.ok) throw new Error(r.response);
    expect(r.accepted).toEqual(to.slice(0, 50));
    expect(r.rejected).toEqual([to[50]!]);
    expect(r.rejectedErrors.map((e) => e.response)).toEqual(["452 4.5.3 Too many recipients (at most 50 per message)"]);
    expect(r.response).toMatch(/^250 2\.0\.0 Ok: queued as [0-9a-f-]{36} and 49 more$/);
    const rows = await env.srv.ctx.db.selectFrom("emails").select("to_email").where("project_id", "=", env.acct.projectId).where("to_email", "like", "many%").execute();
    expect(rows.map((x) => x.to_email).sort()).toEqual(to.slice(0, 50).sort());
  });

  test(`over the spec's ${MAX_MESSAGE_BYTES} bytes: 552, declared (SIZE) or not, nothing queued`, async () => {
    // SIZE is advertised (nodemailer refuses a larger message itself); a larger declared SIZE is refused at MAIL FROM.
    expect(await ehloLines(env.port)).toEqual([
      "250-mailsvc.test Nice to meet you, [127.0.0.1]",
      "250-PIPELINING",
      "250-8BITMIME",
      "250-SMTPUTF8",
      "250-AUTH PLAIN LOGIN",
      "250-STARTTLS",
      `250 SIZE ${MAX_MESSAGE_BYTES}`,
    ]);
    const plain = Buffer.from(`\0app\0${env.acct.secretKey}`).toString("base64");
    expect(await dialog(env.port, [`AUTH PLAIN ${plain}`, `MAIL FROM:<app@${SENDER}> SIZE=${MAX_MESSAGE_BYTES + 1}`])).toEqual([
      "235 Authentication successful",
      `552 Error: message exceeds fixed maximum message size ${MAX_MESSAGE_BYTES}`,
    ]);
    const c = await connect(env.port, { tls: true, ca: env.ca.caPem });
    expect(await c.login("app", env.acct.secretKey)).toBeNull();
    const line = "A".repeat(998) + "\r\n";
    const big = rawMessage({ From: `app@${SENDER}`, Subject: "Big" }, line.repeat(Math.ceil(MAX_MESSAGE_BYTES / line.length) + 1));
    const r = await c.send({ from: `app@${SENDER}`, to: [`big@${RCPT}`] }, big);
    c.close();
    expect(r).toMatchObject({ ok: false, responseCode: 552, response: `552 5.3.4 Message too big (limit ${MAX_MESSAGE_BYTES} bytes)` });
    expect(await emailsTo(env.acct.projectId, `big@${RCPT}`)).toEqual([]);
  });
});

describe("AUTH", () => {
  test("isLoopback: 127/8, ::1 and IPv4-mapped loopback only", () => {
    for (const a of ["127.0.0.1", "127.1.2.3", "::1", "0:0:0:0:0:0:0:1", "::ffff:127.0.0.1", "::ffff:7f00:2", "[::1]"]) expect([a, isLoopback(a)]).toEqual([a, true]);
    for (const a of ["192.0.2.2", "10.0.0.1", "128.0.0.1", "::", "::2", "::ffff:192.0.2.2", "fe80::1", "1.127.0.0", "127.0.0.256", "", "localhost"]) expect([a, isLoopback(a)]).toEqual([a, false]);
  });

  test("the AUTH decision: not over TLS from elsewhere is 530 (naming STARTTLS only when it is offered); over TLS or from loopback the key decides", async () => {
    const ctx = env.srv.ctx;
    const key = env.acct.secretKey;
    const refusal = (p: Promise<unknown>) => p.then(() => null, (e) => ({ code: e.responseCode, text: e.message }));
    expect(await refusal(authenticate(ctx, { password: key, remoteAddress: "192.0.2.9", secure: false, tlsOffered: true }))).toEqual({ code: 530, text: "5.7.0 Must issue a STARTTLS command first: AUTH is accepted over TLS only" });
    expect(await refusal(authenticate(ctx, { password: key, remoteAddress: "2001:db8::9", secure: false, tlsOffered: false }))).toEqual({
      code: 530,
      text: "5.7.0 AUTH needs TLS and this server has no certificate (MAILSVC_TLS_CERT): only local clients may log in",
    });
    expect(await authenticate(ctx, { password: key, remoteAddress: "192.0.2.9", secure: true, tlsOffered: true })).toEqual({ projectId: env.acct.projectId, key });
    expect(await authenticate(ctx, { password: key, remoteAddress: "::ffff:127.0.0.1", secure: false, tlsOffered: false })).toEqual({ projectId: env.acct.projectId, key });
  });

  test("from loopback without TLS, AUTH is accepted and mail goes out", async () => {
    const c = await connect(env.port, { tls: false });
    expect(c.secure()).toBe(false);
    expect(await c.login("app", env.acct.secretKey)).toBeNull();
    const r = await c.send({ from: `app@${SENDER}`, to: [`loop@${RCPT}`] }, rawMessage({ From: `app@${SENDER}`, Subject: "Loopback" }));
    c.close();
    expect(r.ok).toBe(true);
    expect((await lastMessageFor(env, `loop@${RCPT}`)).to).toEqual([`loop@${RCPT}`]);
  });

  test.skipIf(!external)("from a non-loopback address, AUTH before STARTTLS is refused 530; after STARTTLS it is accepted", async () => {
    const plain = await connect(env.port, { host: external!, tls: false });
    expect(await plain.login("app", env.acct.secretKey)).toEqual({ responseCode: 530, response: "530 5.7.0 Must issue a STARTTLS command first: AUTH is accepted over TLS only" });
    plain.close();
    const tls = await connect(env.port, { host: external!, tls: true, ca: env.ca.caPem });
    expect(tls.secure()).toBe(true);
    expect(await tls.login("app", env.acct.secretKey)).toBeNull();
    tls.close();
  });

  test("a wrong key is 535 5.7.8; after 10 failures from the address even the right key waits (454) until the window ends", async () => {
    const c = await connect(env.port, { tls: true, ca: env.ca.caPem });
    const wrong = { responseCode: 535, response: "535 5.7.8 Authentication credentials invalid: use the project's secret key (sk_...) as the password" };
    expect(await c.login("app", "sk_wrongwrongwrongwrong")).toEqual(wrong);
    c.close();
    // A public key is not a password either.
    for (let i = 1; i < 10; i++) {
      const k = await connect(env.port, { tls: true, ca: env.ca.caPem });
      expect(await k.login("app", i === 1 ? env.acct.publicKey : `wrong-${i}`)).toEqual(wrong);
      k.close();
    }
    const blocked = await connect(env.port, { tls: true, ca: env.ca.caPem });
    const refused = await blocked.login("app", env.acct.secretKey);
    expect(refused?.responseCode).toBe(454);
    const wait = Number(/^454 4\.7\.0 Too many failed logins from this address; try again in (\d+) s$/.exec(refused!.response)?.[1]);
    expect(wait).toBeGreaterThan(800);
    expect(wait).toBeLessThanOrEqual(900);
    blocked.close();
    env.srv.clock.advance(15 * 60_000);
    const later = await connect(env.port, { tls: true, ca: env.ca.caPem });
    expect(await later.login("app", env.acct.secretKey)).toBeNull();
    later.close();
  });
});

test("doctor: submission with a certificate is ok; without one only loopback clients can log in (warn), and the TLS port cannot run (fail)", () => {
  const c = env.srv.ctx.config;
  expect(checkSubmission(c)).toEqual({ name: "SMTP submission", status: "ok", detail: `port ${env.port} (STARTTLS) and ${env.tlsPort} (TLS), certificate ${c.tlsCert}` });
  const bare = { ...c, tlsCert: undefined, tlsKey: undefined, inboundTlsCert: undefined, inboundTlsKey: undefined };
  expect(checkSubmission({ ...bare, submissionTlsPort: 0 })).toMatchObject({ status: "warn", detail: "no certificate: only programs on this machine (loopback) can authenticate" });
  expect(checkSubmission(bare)?.status).toBe("fail");
  expect(checkSubmission({ ...c, tlsKey: "/nonexistent/key.pem" })).toMatchObject({ status: "fail", detail: "certificate files not found: /nonexistent/key.pem" });
  expect(checkSubmission({ ...c, submissionPort: 0, submissionTlsPort: 0 })).toBeNull();
});

describe("durability", () => {
  const dir = mkdtempSync(join(tmpdir(), "mailsvc-submission-"));
  const cleanups: (() => Promise<unknown> | void)[] = [];
  afterAll(async () => {
    for (const c of cleanups.reverse()) await c();
    rmSync(dir, { recursive: true, force: true });
  });

  test("kill -9 right after the client's 250, restart: the message is delivered exactly once", async () => {
    const dns = await startDns();
    cleanups.push(() => dns.close());
    dns.mailDomain(RCPT);
    const sink = await startSmtpSink();
    cleanups.push(() => sink.close());
    sink.onRcpt = () => ({ code: 451, message: "4.3.0 not yet" }); // nothing leaves before the restart
    const port = await freeTcpPort();
    const srvEnv = {
      MAILSVC_DB: join(dir, "submission.db"),
      MAILSVC_DNS_SERVERS: dns.server,
      MAILSVC_MX_PORT: String(sink.port),
      MAILSVC_HOSTNAME: "mailsvc.crash",
      MAILSVC_SUBMISSION_PORT: String(port),
      MAILSVC_RETRY_SCHEDULE: "1s",
      // A stable id across the restart: on PostgreSQL a restarted instance takes back its own claims at once
      // (an email claimed when the kill landed would otherwise wait for its lease to end).
      MAILSVC_INSTANCE_ID: "submission-crash",
    };
    let srv: SpawnedServer = await spawnServer(srvEnv);
    cleanups.push(() => srv.kill());
    const api = makeApi(srv.url);
    const acct: Account = await createAccount(api);
    await addVerifiedDomain(api, dns, acct, SENDER);

    const c = await connect(port, { tls: false });
    expect(await c.login("app", acct.secretKey)).toBeNull();
    const to = `durable@${RCPT}`;
    const reply = await new Promise<string>((resolve, reject) =>
      c.conn.send({ from: `app@${SENDER}`, to: [to] } as never, rawMessage({ From: `app@${SENDER}`, To: to, Subject: "Durable" }), (err: any, info: any) => {
        if (err) return reject(err);
        srv.proc.kill("SIGKILL"); // in the callback of the 250, before anything else runs
        resolve(info.response);
      }),
    );
    await srv.proc.exited;
    expect(reply).toMatch(/^250 2\.0\.0 Ok: queued as [0-9a-f-]{36}$/);
    const emailId = /queued as (\S+)/.exec(reply)![1]!;
    expect(sink.byRecipient(to)).toEqual([]);

    sink.onRcpt = () => undefined;
    srv = await spawnServer(srvEnv);
    const api2 = makeApi(srv.url);
    const view = await waitFor(() => api2(`/emails/${emailId}`, { key: acct.secretKey }), { until: (r) => r.body?.status === "DELIVERED", timeoutMs: 15_000, what: "the email DELIVERED" });
    expect(view.body).toMatchObject({ id: emailId, to, sourceType: "SMTP", subject: "Durable" });
    expect(sink.byRecipient(to)).toHaveLength(1);
    expect((await sink.byRecipient(to)[0]!.parse()).subject).toBe("Durable");
  }, 45_000);
});
