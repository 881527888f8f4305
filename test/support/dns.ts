// A real DNS server on 127.0.0.1 (UDP and TCP on one random port) answering from records the test sets.
// TTL is 0 so resolvers never serve a stale answer after a test changes a record.
import dns2 from "dns2";
import { createSocket } from "node:dgram";
import { createServer } from "node:net";

const { Packet } = dns2 as any;

export type RecordType = "A" | "AAAA" | "MX" | "TXT" | "CNAME" | "PTR";
export interface MxValue {
  exchange: string;
  priority: number;
}
type Value = string | MxValue | string[];

export interface TestDns {
  /** `host:port`, the value for MAILSVC_DNS_SERVERS. */
  server: string;
  port: number;
  set(name: string, type: "MX", values: MxValue[]): void;
  set(name: string, type: "TXT", values: (string | string[])[]): void;
  set(name: string, type: "A" | "AAAA" | "CNAME" | "PTR", values: string[]): void;
  remove(name: string, type?: RecordType): void;
  /** Publishes a long TXT value split into 255-byte strings, as a real zone would. */
  setLongTxt(name: string, value: string): void;
  /** Convenience: MX for `domain` pointing at 127.0.0.1 (host mx.<domain>). */
  mailDomain(domain: string): void;
  queries: { name: string; type: string }[];
  close(): Promise<void>;
}

const TYPE_CODES: Record<RecordType, number> = { A: 1, AAAA: 28, MX: 15, TXT: 16, CNAME: 5, PTR: 12 };
const TYPE_NAMES = Object.fromEntries(Object.entries(TYPE_CODES).map(([k, v]) => [v, k])) as Record<number, RecordType>;

/** A port free for UDP and for TCP (the server listens on both; a port free for one only made `listen` fail later, asynchronously). */
async function freePort(): Promise<number> {
  for (;;) {
    const sock = createSocket("udp4");
    await new Promise<void>((r) => sock.bind(0, "127.0.0.1", () => r()));
    const port = sock.address().port;
    await new Promise<void>((r) => sock.close(() => r()));
    const tcpFree = await new Promise<boolean>((resolve) => {
      const srv = createServer();
      srv.once("error", () => resolve(false));
      srv.listen(port, "127.0.0.1", () => srv.close(() => resolve(true)));
    });
    if (tcpFree) return port;
  }
}

export function chunkTxt(value: string): string[] {
  const out: string[] = [];
  for (let i = 0; i < value.length; i += 255) out.push(value.slice(i, i + 255));
  return out;
}

export async function startDns(): Promise<TestDns> {
  const zone = new Map<string, Value[]>();
  const key = (name: string, type: RecordType) => `${name.toLowerCase().replace(/\.$/, "")}|${type}`;
  const queries: { name: string; type: string }[] = [];

  const server = (dns2 as any).createServer({
    udp: true,
    tcp: true,
    handle(request: any, send: (r: any) => void) {
      const response = Packet.createResponseFromRequest(request);
      const [q] = request.questions;
      const type = TYPE_NAMES[q.type];
      queries.push({ name: q.name, type: type ?? String(q.type) });
      const name = q.name.toLowerCase().replace(/\.$/, "");
      const values = type ? zone.get(key(name, type)) : undefined;
      const anyForName = [...zone.keys()].some((k) => k.startsWith(name + "|"));
      if (!values || !values.length) {
        if (!anyForName) response.header.rcode = 3; // NXDOMAIN
        send(response);
        return;
      }
      for (const v of values) {
        const base = { name: q.name, type: q.type, class: Packet.CLASS.IN, ttl: 0 };
        if (type === "MX") response.answers.push({ ...base, exchange: (v as MxValue).exchange, priority: (v as MxValue).priority });
        else if (type === "TXT") response.answers.push({ ...base, data: v });
        else if (type === "CNAME" || type === "PTR") response.answers.push({ ...base, domain: v });
        else response.answers.push({ ...base, address: v });
      }
      send(response);
    },
  });

  let port = 0;
  for (let i = 0; i < 5; i++) {
    port = await freePort();
    try {
      await server.listen({ udp: { port, address: "127.0.0.1" }, tcp: { port, address: "127.0.0.1" } });
      break;
    } catch (e) {
      if (i === 4) throw e;
    }
  }

  const api: TestDns = {
    server: `127.0.0.1:${port}`,
    port,
    queries,
    set(name: string, type: RecordType, values: any[]) {
      zone.set(key(name, type), values);
    },
    remove(name: string, type?: RecordType) {
      const n = name.toLowerCase();
      for (const k of [...zone.keys()]) if (k.startsWith(n + "|") && (!type || k === key(n, type))) zone.delete(k);
    },
    setLongTxt(name: string, value: string) {
      zone.set(key(name, "TXT"), [chunkTxt(value)]);
    },
    mailDomain(domain: string) {
      zone.set(key(domain, "MX"), [{ exchange: `mx.${domain}`, priority: 10 }]);
      zone.set(key(`mx.${domain}`, "A"), ["127.0.0.1"]);
    },
    async close() {
      await server.close();
    },
  } as TestDns;
  return api;
}
