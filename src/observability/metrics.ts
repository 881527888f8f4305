import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from "prom-client";

/**
 * The Prometheus metrics of one running instance (own Registry: tests run several instances in
 * one process). Everything that counts something a user or operator cares about reports here.
 */
export class Metrics {
  readonly registry = new Registry();
  readonly httpRequests = new Counter({
    name: "mailsvc_http_requests_total",
    help: "HTTP requests by route and status",
    labelNames: ["method", "route", "status"] as const,
    registers: [this.registry],
  });
  readonly httpDuration = new Histogram({
    name: "mailsvc_http_request_duration_seconds",
    help: "HTTP request latency by route",
    labelNames: ["method", "route"] as const,
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    registers: [this.registry],
  });
  readonly deliveryAttempts = new Counter({
    name: "mailsvc_delivery_attempts_total",
    help: "Outbound delivery attempts by result (delivered, sent (relay), deferred, bounced)",
    labelNames: ["result"] as const,
    registers: [this.registry],
  });
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
  readonly inboundMessages = new Counter({
    name: "mailsvc_inbound_messages_total",
    help: "Inbound SMTP messages by kind (bounce, complaint, unsubscribe, received, rejected)",
    labelNames: ["kind"] as const,
    registers: [this.registry],
  });
  readonly outboxDepth: Gauge<"status">;

  constructor(outboxCounts: () => Promise<Record<string, number>> | Record<string, number>) {
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
