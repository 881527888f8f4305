import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from "prom-client";
import { RateSignal } from "./load";

/**
 * The Prometheus metrics of one running instance (own Registry: tests run several instances in
 * one process). Everything that counts something a user or operator cares about reports here.
 */
export class Metrics {
  readonly registry = new Registry();
  /** A counter with one label, in this instance's registry. */
  private counter<L extends string>(name: string, help: string, label: L) {
    return new Counter<L>({ name, help, labelNames: [label], registers: [this.registry] });
  }
  /** HTTP stats are kept in plain maps (prom-client's label hashing per request cost ~30% of a cheap route). */
  readonly http = new HttpStats();
  /** Delivery attempts made since start (a plain number: the load signal reads it on every webhook dispatch). */
  mailAttempts = 0;
  /** The API answered more than 50 requests/s lately: the workflow engine yields most of the time. */
  readonly apiLoad = new RateSignal(() => this.http.total, 50);
  /**
   * The delivery engine made more than 100 attempts/s lately (a bulk send; attempts settle in
   * groups, so a quiet second does not end it): webhook dispatch waits (MAILSVC_WEBHOOK_MAX_DEFER).
   */
  readonly mailLoad = new RateSignal(() => this.mailAttempts, 100, 1000);
  readonly deliveryAttempts = this.counter("mailsvc_delivery_attempts_total", "Outbound delivery attempts by result (delivered, sent (relay), deferred, bounced)", "result");
  /** Sandbox mail: captured instead of sent, so never a delivery attempt (mailsvc_delivery_attempts_total). */
  readonly sandboxCaptured = this.counter("mailsvc_sandbox_captured_total", "Messages captured by the sandbox instead of being sent, by simulated result (delivered, deferred, bounced)", "result");
  readonly dkimSignSeconds = new Histogram({
    name: "mailsvc_dkim_sign_duration_seconds",
    help: "Time to DKIM-sign one message",
    buckets: [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05],
    registers: [this.registry],
  });
  readonly jobLagSeconds = new Histogram({
    name: "mailsvc_job_lag_seconds",
    help: "Delay between a job's run_at and the moment the job loop claimed it",
    labelNames: ["type"] as const,
    buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
    registers: [this.registry],
  });
  readonly inboundMessages = this.counter("mailsvc_inbound_messages_total", "Inbound SMTP messages by kind (bounce, complaint, unsubscribe, received, rejected)", "kind");
  readonly outboxDepth: Gauge<"status">;

  /** `instance` (MAILSVC_INSTANCE_ID) labels every series, so that many instances' scrapes add up. */
  constructor(outboxCounts: () => Promise<Record<string, number>> | Record<string, number>, instance?: string) {
    if (instance) {
      this.registry.setDefaultLabels({ instance });
      this.http.instance = instance;
    }
    this.outboxDepth = new Gauge({
      name: "mailsvc_outbox_emails",
      help: "Emails by status (the outbox depth is PENDING + SENDING + DEFERRED)",
      labelNames: ["status"] as const,
      registers: [this.registry],
      async collect() {
        this.reset();
        const counts = await outboxCounts();
        for (const [status, n] of Object.entries(counts)) this.set({ status }, n);
      },
    });
    collectDefaultMetrics({ register: this.registry, prefix: "mailsvc_process_" });
  }
}

const HTTP_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5];

interface RouteLatency {
  method: string;
  route: string;
  buckets: Float64Array;
  sum: number;
  count: number;
}

/** Requests by (method, route, status) and a latency histogram by (method, route), exposed in Prometheus text format. */
export class HttpStats {
  private counts = new Map<string, { method: string; route: string; status: string; n: number }>();
  private latency = new Map<string, RouteLatency>();

  /** Requests answered since start (the workflow engine backs off while the API is busy). */
  total = 0;
  /** The instance label of every line (set by Metrics). */
  instance = "";

  record(method: string, route: string, status: string, seconds: number): void {
    this.total++;
    const ck = method + " " + route + " " + status;
    const c = this.counts.get(ck);
    if (c) c.n++;
    else this.counts.set(ck, { method, route, status, n: 1 });
    const lk = method + " " + route;
    let l = this.latency.get(lk);
    if (!l) this.latency.set(lk, (l = { method, route, buckets: new Float64Array(HTTP_BUCKETS.length), sum: 0, count: 0 }));
    l.sum += seconds;
    l.count++;
    for (let i = 0; i < HTTP_BUCKETS.length; i++) if (seconds <= HTTP_BUCKETS[i]!) l.buckets[i]!++;
  }

  text(): string {
    const esc = (v: string) => v.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n");
    const inst = this.instance ? `instance="${esc(this.instance)}",` : "";
    const out: string[] = [
      "# HELP mailsvc_http_requests_total HTTP requests by route and status",
      "# TYPE mailsvc_http_requests_total counter",
    ];
    for (const c of this.counts.values()) {
      out.push(`mailsvc_http_requests_total{${inst}method="${esc(c.method)}",route="${esc(c.route)}",status="${esc(c.status)}"} ${c.n}`);
    }
    out.push("# HELP mailsvc_http_request_duration_seconds HTTP request latency by route", "# TYPE mailsvc_http_request_duration_seconds histogram");
    for (const l of this.latency.values()) {
      const labels = `${inst}method="${esc(l.method)}",route="${esc(l.route)}"`;
      HTTP_BUCKETS.forEach((b, i) => out.push(`mailsvc_http_request_duration_seconds_bucket{${labels},le="${b}"} ${l.buckets[i]}`));
      out.push(`mailsvc_http_request_duration_seconds_bucket{${labels},le="+Inf"} ${l.count}`);
      out.push(`mailsvc_http_request_duration_seconds_sum{${labels}} ${l.sum}`);
      out.push(`mailsvc_http_request_duration_seconds_count{${labels}} ${l.count}`);
    }
    return out.join("\n") + "\n";
  }
}
