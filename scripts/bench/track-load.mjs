// Load generator of scripts/bench/track.ts, run under Node (autocannon's home runtime) so the client
// costs as little CPU as possible. argv[2]: JSON { url, key, connections, duration, warmup }.
// Prints the autocannon result as one JSON line.
import autocannon from "autocannon";

const cfg = JSON.parse(process.argv[2]);
const PLANS = ["free", "pro", "team", "enterprise"];
const EVENTS = ["signup", "login", "purchase", "page_view", "invite_sent"];
const REPEAT_POOL = 5000;
let seq = 0;
function body() {
  const repeat = Math.random() < 0.5;
  seq++;
  const email = repeat ? `repeat${Math.floor(Math.random() * REPEAT_POOL)}@example.com` : `new${process.pid}.${seq}@example.com`;
  const data = { plan: PLANS[Math.floor(Math.random() * PLANS.length)], visits: Math.floor(Math.random() * 1000), score: Math.random() };
  if (Math.random() < 0.2) data.coupon = { value: "SAVE" + Math.floor(Math.random() * 100), persistent: false };
  return JSON.stringify({ email, event: EVENTS[seq % EVENTS.length], data });
}
// Bodies are made before the run (enough for 25k req/s): the client's CPU goes to sending them.
const pool = Array.from({ length: (cfg.duration + (cfg.warmup ?? 0)) * 25_000 }, body);
let next = 0;
const opts = {
  url: cfg.url,
  connections: cfg.connections,
  method: "POST",
  headers: { "content-type": "application/json", authorization: `Bearer ${cfg.key}` },
  requests: [{ setupRequest: (req) => ({ ...req, body: pool[next++ % pool.length] }) }],
};
if (cfg.warmup) await autocannon({ ...opts, duration: cfg.warmup });
const r = await autocannon({ ...opts, duration: cfg.duration });
process.stdout.write(JSON.stringify({ requests: r.requests, latency: r.latency, non2xx: r.non2xx, errors: r.errors, timeouts: r.timeouts }) + "\n");
