// The channel between instances on one PostgreSQL database (issue 32): LISTEN/NOTIFY on `mailsvc_peers`.
// One dedicated `pg` client outside the pool holds the LISTEN (a pooled connection could be handed to a
// query and lose it); messages go out with pg_notify on the pool. PostgreSQL delivers a notification to
// every listening session when the sending transaction commits (at once for a statement outside one),
// in commit order, never to a session that was not listening then. On SQLite (one instance per file)
// there is no peer: the channel is a no-op.
//
// Why LISTEN/NOTIFY: milliseconds of latency, nothing to run beside the database, and delivery tied to
// commit. What it does not give: a message sent while our listener is disconnected is lost. So the
// channel reports when it goes down and when it is back (`onGap`): the bus then drops every cache, and
// keeps dropping them while it stays down, so a missed message never leaves a cache stale.
import pg from "pg";
import type { Store } from "./index";

export const PEER_CHANNEL = "mailsvc_peers";

/** What travels between instances: who sent it, which cache or wake-up, which row (a project id). */
export interface PeerMessage {
  from: string;
  topic: string;
  id: string;
  /** A finer key under id when the topic has one (a domain name under its project). */
  sub?: string;
}

export interface PeerChannel {
  /** Whether messages are received now (always true when there are no peers). */
  readonly listening: boolean;
  /** Sends a message to every other instance (after the change committed). */
  send(message: PeerMessage): Promise<void>;
  close(): Promise<void>;
}

export interface PeerChannelHandlers {
  onMessage(message: PeerMessage): void;
  /** The listener went down (messages may be missed from now on) or came back (messages may have been missed). */
  onGap(state: "down" | "up"): void;
  onError(what: string, error: unknown): void;
}

/** How long to wait before listening again after the connection dropped (then doubled, at most 5 s). */
export const RECONNECT_MS = 250;
const MAX_RECONNECT_MS = 5_000;

/**
 * Opens the channel: LISTEN on PostgreSQL (connecting in the background; `onGap("up")` once it
 * listens, the first time too, since a peer's message may have gone by meanwhile), nothing on SQLite.
 */
export function openPeerChannel(store: Store, databaseUrl: string | undefined, handlers: PeerChannelHandlers): PeerChannel {
  if (store.engine !== "postgres" || !databaseUrl || !store.pg) return { listening: true, send: async () => {}, close: async () => {} };
  const pool = store.pg;
  let client: pg.Client | null = null;
  let listening = false;
  let closed = false;
  let retryMs = RECONNECT_MS;
  let timer: ReturnType<typeof setTimeout> | null = null;

  const lost = (why: unknown) => {
    if (client) {
      const c = client;
      client = null;
      c.removeAllListeners("notification");
      c.end().catch(() => {});
    }
    const was = listening;
    listening = false;
    if (closed) return;
    if (was) handlers.onError("peer channel: the LISTEN connection dropped", why);
    handlers.onGap("down");
    if (!timer) {
      timer = setTimeout(() => {
        timer = null;
        void connect();
      }, retryMs);
      retryMs = Math.min(retryMs * 2, MAX_RECONNECT_MS);
    }
  };

  const connect = async () => {
    if (closed || client) return;
    // TCP keep-alive: a connection a firewall dropped silently is noticed (then `error`/`end`: reconnect).
    const c = new pg.Client({ connectionString: databaseUrl, application_name: "mailsvc peers", keepAlive: true, keepAliveInitialDelayMillis: 10_000 } as pg.ClientConfig);
    client = c;
    c.on("error", (e) => {
      if (client === c) lost(e);
    });
    c.on("end", () => {
      if (client === c) lost(new Error("connection ended"));
    });
    c.on("notification", (n) => {
      if (n.channel !== PEER_CHANNEL || !n.payload) return;
      let m: PeerMessage;
      try {
        m = JSON.parse(n.payload);
      } catch {
        return;
      }
      if (typeof m?.topic === "string" && typeof m.from === "string" && typeof m.id === "string") handlers.onMessage(m);
    });
    try {
      await c.connect();
      await c.query(`LISTEN ${PEER_CHANNEL}`);
      if (client !== c || closed) return;
      listening = true;
      retryMs = RECONNECT_MS;
      // Anything sent before this moment (while down, or a peer's change racing our start) was missed.
      handlers.onGap("up");
    } catch (e) {
      if (client === c) lost(e);
    }
  };

  const ready = connect();
  return {
    get listening() {
      return listening;
    },
    async send(message) {
      await pool.query("SELECT pg_notify($1, $2)", [PEER_CHANNEL, JSON.stringify(message)]);
    },
    async close() {
      closed = true;
      if (timer) clearTimeout(timer);
      timer = null;
      await ready.catch(() => {});
      const c = client;
      client = null;
      listening = false;
      if (c) await c.end().catch(() => {});
    },
  };
}

/** Test hook: ends the LISTEN connection from the server side, as a network failure would. */
export async function dropPeerListeners(store: Store): Promise<number> {
  if (!store.pg) return 0;
  const r = await store.pg.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'mailsvc peers' AND datname = current_database()");
  return r.rowCount ?? 0;
}
