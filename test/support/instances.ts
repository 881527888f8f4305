// N `mailsvc serve` processes on one database (PostgreSQL: the same MAILSVC_DB value names the same
// database for every process, see engineEnv): start them, kill one (-9 or SIGTERM), start it back, and
// spread API calls round-robin over the live ones.
import { engineEnv, makeApi, spawnServer, type Api, type SpawnedServer } from "./server";

export interface Peer {
  id: string;
  srv: SpawnedServer | null;
  api: Api | null;
}

export interface Peers {
  peers: Peer[];
  /** The API of the next live instance (round-robin). */
  next(): Api;
  /** The API of every live instance. */
  live(): Api[];
  kill(i: number, signal?: NodeJS.Signals): Promise<void>;
  start(i: number): Promise<void>;
  /** SIGTERM and wait for each live instance. */
  close(): Promise<void>;
  /** The database URL (PostgreSQL) every instance uses. */
  databaseUrl(): Promise<string | undefined>;
}

/** Starts `n` instances with ids `${prefix}-0` … sharing `env` (MAILSVC_DB names the database). */
export async function startPeers(n: number, env: Record<string, string>, prefix = "peer"): Promise<Peers> {
  const peers: Peer[] = Array.from({ length: n }, (_, i) => ({ id: `${prefix}-${i}`, srv: null, api: null }));
  let rr = 0;
  const start = async (i: number) => {
    const p = peers[i]!;
    p.srv = await spawnServer({ ...env, MAILSVC_INSTANCE_ID: p.id }, 30_000);
    p.api = makeApi(p.srv.url);
  };
  // One first (it runs the migrations), the others then.
  await start(0);
  await Promise.all(peers.slice(1).map((_, i) => start(i + 1)));
  const live = () => peers.filter((p) => p.api).map((p) => p.api!);
  return {
    peers,
    live,
    next() {
      const l = live();
      if (!l.length) throw new Error("no live instance");
      return l[rr++ % l.length]!;
    },
    async kill(i, signal = "SIGKILL") {
      const p = peers[i]!;
      const srv = p.srv;
      p.srv = null;
      p.api = null;
      if (srv) await srv.kill(signal);
    },
    start,
    async close() {
      await Promise.all(peers.map(async (p) => p.srv && (await p.srv.kill("SIGTERM"))));
    },
    async databaseUrl() {
      return (await engineEnv(env)).MAILSVC_DATABASE_URL;
    },
  };
}
