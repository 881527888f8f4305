// Destinations and their connections. Messages for the same MX set (or the relay) share a queue
// served by up to N long-lived SMTP sessions; a session carries message after message, parks idle
// for a while when the queue runs dry, and is replaced when it dies. A session sends its next
// message only after the previous outcome is committed, so a crash can double-send at most one
// message per connection (the one between the remote 250 and our commit).
import type { Logger } from "../../http/logger";
import type { MxHost, RouteCache } from "./mx";
import { mxMatches, type MtaSts } from "./mta-sts";
import { SmtpClient, type SmtpTarget, type SmtpTimeouts } from "./smtp-client";
import { deferred, type DeliveryResult } from "./smtp-result";

export interface DeliveryInfo {
  /** The host that answered (MX host name or relay host), null when none was reached. */
  host: string | null;
  secure: boolean;
  /** How long the SMTP transaction took (0 when no connection was made). */
  ms: number;
}

export interface Delivery {
  id: string;
  /** Recipient domain (routing key). */
  domain: string;
  /** Envelope MAIL FROM. */
  from: string;
  /** Envelope RCPT TO. */
  to: string;
  raw: Buffer;
  /** Goes ahead of the destination's queue (transactional mail passes waiting campaign mail). */
  urgent?: boolean;
  /** Records the outcome; resolves once it is durable. */
  done(result: DeliveryResult, info: DeliveryInfo): Promise<void>;
  /**
   * Asked just before the message is offered to a server: a promise (its outcome being recorded)
   * when it is no longer to be sent (its campaign was cancelled while it waited), else null.
   */
  withdraw?(): Promise<void> | null;
}

export interface RelayTarget {
  host: string;
  port: number;
  secure: boolean;
  auth?: { user: string; pass: string };
}

export interface DispatcherOptions {
  clientName: string;
  mxPort: number;
  relay: RelayTarget | null;
  routes: RouteCache;
  log: Logger;
  /** MTA-STS policies of destination domains (absent: opportunistic TLS everywhere). */
  mtaSts?: MtaSts;
  maxConnectionsPerDestination?: number;
  idleMs?: number;
  maxMessagesPerConnection?: number;
  timeouts?: Partial<SmtpTimeouts>;
}

/** Parses MAILSVC_SMTP_RELAY: smtp[s]://user:pass@host:port. */
export function parseRelayUrl(url: string): RelayTarget {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw new Error(`invalid SMTP relay URL "${url}" (expected smtp[s]://user:pass@host:port)`);
  }
  const secure = u.protocol === "smtps:";
  if (!secure && u.protocol !== "smtp:") throw new Error(`SMTP relay URL must start with smtp:// or smtps://, got "${u.protocol}"`);
  const user = decodeURIComponent(u.username);
  const pass = decodeURIComponent(u.password);
  return {
    host: u.hostname.replace(/^\[|\]$/g, ""),
    port: u.port ? Number(u.port) : secure ? 465 : 587,
    secure,
    ...(user ? { auth: { user, pass } } : {}),
  };
}

class Destination {
  queue: Delivery[] = [];
  private idle: { client: SmtpClient; timer: ReturnType<typeof setTimeout> }[] = [];
  /** Sessions open or being opened. */
  connections = 0;
  private opening = 0;
  /** Messages currently on the wire. */
  active = 0;

  constructor(
    readonly key: string,
    public hosts: MxHost[] | null,
    private readonly d: Dispatcher,
    /** MTA-STS: enforce (verified TLS only) or testing (report sessions without TLS) for this MX set. */
    readonly sts: { mode: "enforce" | "testing"; domain: string } | null = null,
  ) {}

  add(del: Delivery) {
    // Urgent messages keep their order among themselves, ahead of every non-urgent one.
    const at = del.urgent ? this.queue.findIndex((q) => !q.urgent) : -1;
    if (at >= 0) this.queue.splice(at, 0, del);
    else this.queue.push(del);
    this.pump();
  }

  pump() {
    if (this.d.closing) return;
    while (this.queue.length && this.idle.length) {
      const { client, timer } = this.idle.pop()!;
      clearTimeout(timer);
      if (!client.usable) {
        this.connections--;
        continue;
      }
      void this.run(client);
    }
    const want = Math.min(this.d.maxConnections - this.connections, this.queue.length - this.opening);
    for (let i = 0; i < want; i++) {
      this.connections++;
      this.opening++;
      void this.openAndRun();
    }
  }

  private async openAndRun() {
    const res = await this.open();
    this.opening--;
    if (!res.ok) {
      this.connections--;
      // Nobody else is serving this destination: everything queued fails the same way now.
      if (this.connections === 0) {
        const failed = this.queue.splice(0);
        await Promise.all(failed.map((del) => del.done(res.result, { host: res.host, secure: false, ms: 0 }).catch(() => {})));
      }
      this.forgetIfUnused();
      return;
    }
    await this.run(res.client);
  }

  private async open(): Promise<{ ok: true; client: SmtpClient } | { ok: false; result: DeliveryResult; host: string | null }> {
    const base = { clientName: this.d.opts.clientName, timeouts: this.d.opts.timeouts };
    const relay = this.d.opts.relay;
    if (relay) {
      const r = await SmtpClient.open({ ...base, host: relay.host, port: relay.port, secure: relay.secure, auth: relay.auth, servername: relay.host });
      return r.ok ? r : { ok: false, result: r.result, host: relay.host };
    }
    let last: DeliveryResult = deferred("no MX host could be reached", "connect", 0);
    let lastHost: string | null = null;
    for (const h of this.hosts ?? []) {
      const { addresses, error } = await this.d.opts.routes.addresses(h.name);
      if (!addresses.length) {
        last = deferred(`MX host ${h.name} has no address${error ? ` (${(error as { code?: string }).code ?? "DNS error"})` : ""}`, "dns", 0);
        lastHost = h.name;
        continue;
      }
      for (const addr of addresses) {
        const target: SmtpTarget = { ...base, host: addr, port: this.d.opts.mxPort, servername: h.name };
        if (this.sts?.mode === "enforce") target.verifiedTls = { ca: this.d.opts.mtaSts?.trusted() };
        const r = await SmtpClient.open(target);
        if (r.ok) {
          if (this.sts?.mode === "testing" && !r.client.secure && this.d.reportOnce(`tls:${this.sts.domain}`)) {
            this.d.opts.log.warn("mta-sts (testing): an enforce policy would have refused this session (no TLS)", { domain: this.sts.domain, mx: h.name });
          }
          return r;
        }
        last = this.sts?.mode === "enforce" ? deferred(`MTA-STS policy of ${this.sts.domain} (enforce) requires verified TLS to ${h.name}: ${r.result.reply}`, "tls", 0) : r.result;
        lastHost = h.name;
      }
    }
    return { ok: false, result: last, host: lastHost };
  }

  private async run(client: SmtpClient) {
    const host = client.target.servername ?? client.target.host;
    const reusable = () => client.usable && client.transactions < this.d.maxMessages && !this.d.closing;
    while (this.queue.length && reusable()) {
      const del = this.queue.shift()!;
      const withdrawn = del.withdraw?.();
      if (withdrawn) {
        withdrawn.catch((e) => this.d.opts.log.error("recording a withdrawn delivery failed", { email: del.id, error: String(e) }));
        continue;
      }
      const offered = client.transactions;
      const t0 = performance.now();
      this.active++;
      let result: DeliveryResult;
      try {
        result = await client.send(del.from, del.to, del.raw);
      } finally {
        this.active--;
      }
      if (client.transactions === offered) {
        // The session died before this message was offered: another session takes it.
        this.queue.unshift(del);
        break;
      }
      try {
        await del.done(result, { host, secure: client.secure, ms: Math.round(performance.now() - t0) });
      } catch (e) {
        this.d.opts.log.error("recording a delivery outcome failed", { email: del.id, error: String(e) });
      }
    }
    if (reusable()) {
      const timer = setTimeout(() => {
        const i = this.idle.findIndex((x) => x.client === client);
        if (i >= 0) {
          this.idle.splice(i, 1);
          this.connections--;
          client.close();
          this.forgetIfUnused();
        }
      }, this.d.idleMs);
      (timer as { unref?: () => void }).unref?.();
      this.idle.push({ client, timer });
      return;
    }
    client.close();
    this.connections--;
    if (this.queue.length) this.pump();
    else this.forgetIfUnused();
  }

  /** A destination with no session and nothing queued leaves the dispatcher's map (one per MX set ever seen otherwise). */
  private forgetIfUnused() {
    if (this.connections === 0 && this.opening === 0 && !this.queue.length) this.d.forget(this);
  }

  closeIdle() {
    for (const { client, timer } of this.idle.splice(0)) {
      clearTimeout(timer);
      client.close();
      this.connections--;
    }
  }

  get busy(): boolean {
    return this.active > 0 || this.opening > 0;
  }
}

export class Dispatcher {
  private destinations = new Map<string, Destination>();
  closing = false;
  readonly maxConnections: number;
  readonly idleMs: number;
  readonly maxMessages: number;

  constructor(readonly opts: DispatcherOptions) {
    this.maxConnections = opts.maxConnectionsPerDestination ?? 10;
    this.idleMs = opts.idleMs ?? 10_000;
    this.maxMessages = opts.maxMessagesPerConnection ?? 1000;
  }

  /** Routes a ready message to its destination queue (failing it at once when the route says so). */
  async submit(del: Delivery): Promise<void> {
    if (this.opts.relay) return this.destination("relay", null).add(del);
    const route = await this.opts.routes.route(del.domain);
    if (route.kind === "fail") {
      await del.done(route.result, { host: null, secure: false, ms: 0 });
      return;
    }
    let hosts = route.hosts;
    let sts: Destination["sts"] = null;
    const policy = this.opts.mtaSts ? await this.opts.mtaSts.policyFor(del.domain) : null;
    if (policy && policy.mode !== "none") {
      const allowed = hosts.filter((h) => mxMatches(h.name, policy.mx));
      if (policy.mode === "enforce") {
        if (!allowed.length) {
          const reply = `MTA-STS policy of ${del.domain} (enforce): no MX host matches ${policy.mx.join(", ")}`;
          await del.done(deferred(reply, "dns", 0), { host: null, secure: false, ms: 0 });
          return;
        }
        hosts = allowed;
      } else if (allowed.length < hosts.length && this.reportOnce(`mx:${del.domain}`)) {
        this.opts.log.warn("mta-sts (testing): MX hosts outside the policy would be refused under enforce", {
          domain: del.domain,
          outside: hosts.filter((h) => !allowed.includes(h)).map((h) => h.name),
        });
      }
      sts = { mode: policy.mode, domain: del.domain };
    }
    const key = (sts ? `sts-${sts.mode}:` : "mx:") + hosts.map((h) => h.name).sort().join(",");
    this.destination(key, hosts, sts).add(del);
  }

  private destination(key: string, hosts: MxHost[] | null, sts: Destination["sts"] = null): Destination {
    let dest = this.destinations.get(key);
    if (!dest) {
      dest = new Destination(key, hosts, this, sts);
      this.destinations.set(key, dest);
    } else if (hosts) dest.hosts = hosts;
    return dest;
  }

  private reported = new Map<string, number>();
  /** MTA-STS testing-mode reports: at most one per domain and kind per hour. */
  reportOnce(key: string): boolean {
    const now = Date.now();
    const last = this.reported.get(key);
    if (last !== undefined && now - last < 3_600_000) return false;
    if (this.reported.size > 10_000) this.reported.clear();
    this.reported.set(key, now);
    return true;
  }

  forget(dest: Destination): void {
    if (this.destinations.get(dest.key) === dest) this.destinations.delete(dest.key);
  }

  /** Messages on the wire right now (their outcome is still to come). */
  get onWire(): number {
    let n = 0;
    for (const d of this.destinations.values()) n += d.active;
    return n;
  }

  /** Messages queued but not yet on the wire. */
  get queued(): number {
    let n = 0;
    for (const d of this.destinations.values()) n += d.queue.length;
    return n;
  }

  /**
   * Stops taking messages off the queues and waits (bounded) for messages on the wire to finish.
   * Returns the deliveries that never started, for the caller to put back.
   */
  async close(timeoutMs = 15_000): Promise<Delivery[]> {
    this.closing = true;
    const left: Delivery[] = [];
    for (const d of this.destinations.values()) left.push(...d.queue.splice(0));
    const t0 = Date.now();
    while ([...this.destinations.values()].some((d) => d.busy) && Date.now() - t0 < timeoutMs) await Bun.sleep(10);
    for (const d of this.destinations.values()) d.closeIdle();
    return left;
  }
}
