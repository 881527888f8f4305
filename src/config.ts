import { hostname } from "node:os";

/** The one typed configuration. Nothing else reads process.env. */
export interface Config {
  /** The SQLite file (the default engine). */
  db: string;
  /** postgres://… : run on PostgreSQL instead of the SQLite file (docs/operations.md "PostgreSQL"). */
  databaseUrl?: string;
  /** Names this process in logs, /metrics and lease columns (default <hostname>-<pid>). */
  instanceId: string;
  /** How long a claim on background work lasts before another instance may take it over. */
  leaseMs: number;
  host: string;
  port: number;
  publicUrl: string;
  hostname: string;
  jwtSecret?: string;
  disableSignups: boolean;
  dnsServers: string[];
  mxPort: number;
  smtpRelay?: string;
  inboundSmtpPort: number;
  /** PEM files of the inbound listener's certificate; STARTTLS is offered only when both are set. */
  inboundTlsCert?: string;
  inboundTlsKey?: string;
  /** Largest inbound message accepted (SIZE), in bytes. */
  inboundMaxBytes: number;
  /** PEM files of our certificate for SMTP submission (and inbound, when its own are unset). */
  tlsCert?: string;
  tlsKey?: string;
  /** SMTP submission (RFC 6409) with STARTTLS; 0 = off. */
  submissionPort: number;
  /** SMTP submission with implicit TLS (RFC 8314); 0 = off. */
  submissionTlsPort: number;
  systemFrom?: string;
  rateLimit: number;
  idempotencyTtlHours: number;
  domainCheckIntervalMs: number;
  segmentSweepIntervalMs: number;
  retryScheduleMs: number[];
  logRequests: boolean;
  allowPrivateWebhooks: boolean;
  /** Waits between outbound webhook attempts (and the first ones of workflow WEBHOOK retries). */
  webhookRetryScheduleMs: number[];
  /** How long a webhook delivery may wait while the delivery engine sends in bulk (0: never waits). */
  webhookMaxDeferMs: number;
  metricsToken?: string;
  /** MTA-STS (RFC 8461) for outbound delivery. */
  mtaSts: boolean;
  /** PEM file of extra CAs trusted for MTA-STS policy hosts and enforce-mode MX certificates. */
  mtaStsCa?: string;
  /** HTTPS port of MTA-STS policy hosts (443; tests use another). */
  mtaStsPort: number;
  /** Outbound messages per second per project (IP warm-up); unset = unlimited. */
  sendRate?: number;
  /** Contacts written per campaign fan-out transaction. */
  campaignBatchSize: number;
  /** Stripe (billing is off unless the secret key, webhook secret and price are all set). */
  stripeSecretKey?: string;
  stripeWebhookSecret?: string;
  stripePriceId?: string;
  /** Base URL of the Stripe API (tests point it at a local fake); default https://api.stripe.com. */
  stripeApiBase?: string;
  /** Keep the event rollups (the analytics.rollups feed consumer); off only to measure their cost. */
  analyticsRollups: boolean;
  /** Sign DKIM RSA keys with the system's OpenSSL 3 (libcrypto.so.3) when it loads; off: Bun's WebCrypto. */
  dkimOpenssl: boolean;
  /** Every project is a sandbox: mail is captured, never sent (a demo or staging server). */
  sandbox: boolean;
  /** Keep the message of every email as handed to SMTP (GET /emails/:id/raw); sandbox mail is always kept. */
  keepRaw: boolean;
}

interface Option {
  key: keyof Config;
  env: string;
  flag: string;
  help: string;
  parse: (raw: string) => unknown;
}

const str = (s: string) => s;
const bool = (s: string) => /^(1|true|yes|on)$/i.test(s.trim());
const int = (name: string) => (s: string) => {
  const n = Number(s);
  if (!Number.isInteger(n) || n < 0) throw new ConfigError(`${name} must be a non-negative integer, got "${s}"`);
  return n;
};
const databaseUrl = (s: string) => {
  if (!/^postgres(ql)?:\/\//i.test(s.trim())) throw new ConfigError(`MAILSVC_DATABASE_URL must be a postgres:// URL, got "${s}"`);
  return s.trim();
};
const list = (s: string) => s.split(",").map((x) => x.trim()).filter(Boolean);

export class ConfigError extends Error {}

/** Parses "90s", "5m", "1h", "2d", "500ms" or a bare number of seconds. */
export function parseDuration(s: string): number {
  const m = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)?\s*$/i.exec(s);
  if (!m) throw new ConfigError(`invalid duration "${s}" (use e.g. 30s, 5m, 1h, 2d)`);
  const n = Number(m[1]);
  const unit = (m[2] ?? "s").toLowerCase();
  const factor = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 }[unit]!;
  return Math.round(n * factor);
}

export const OPTIONS: Option[] = [
  { key: "db", env: "MAILSVC_DB", flag: "--db", help: "SQLite file (created with its folder)", parse: str },
  { key: "databaseUrl", env: "MAILSVC_DATABASE_URL", flag: "--database-url", help: "postgres://user:pass@host:5432/db: run on PostgreSQL instead of the SQLite file", parse: databaseUrl },
  { key: "instanceId", env: "MAILSVC_INSTANCE_ID", flag: "--instance-id", help: "this instance's name in logs, /metrics and leases (default <hostname>-<pid>)", parse: str },
  { key: "leaseMs", env: "MAILSVC_LEASE", flag: "--lease", help: "how long a claim on background work lasts before another instance may take it over", parse: parseDuration },
  { key: "host", env: "MAILSVC_HOST", flag: "--host", help: "HTTP listen address", parse: str },
  { key: "port", env: "MAILSVC_PORT", flag: "--port", help: "HTTP port", parse: int("port") },
  { key: "publicUrl", env: "MAILSVC_PUBLIC_URL", flag: "--public-url", help: "base of tracking, unsubscribe and upload URLs", parse: (s) => s.replace(/\/+$/, "") },
  { key: "hostname", env: "MAILSVC_HOSTNAME", flag: "--hostname", help: "HELO name, Message-ID domain, MX target of bounce domains", parse: str },
  { key: "jwtSecret", env: "MAILSVC_JWT_SECRET", flag: "--jwt-secret", help: "session signing key (default: generated once, stored in the DB)", parse: str },
  { key: "disableSignups", env: "MAILSVC_DISABLE_SIGNUPS", flag: "--disable-signups", help: "make /auth/signup answer 403", parse: bool },
  { key: "dnsServers", env: "MAILSVC_DNS_SERVERS", flag: "--dns-servers", help: "comma list of host[:port] for MX/TXT/verification lookups", parse: list },
  { key: "mxPort", env: "MAILSVC_MX_PORT", flag: "--mx-port", help: "port used when delivering to an MX host", parse: int("mx port") },
  { key: "smtpRelay", env: "MAILSVC_SMTP_RELAY", flag: "--smtp-relay", help: "smtp[s]://user:pass@host:port relay for all outbound mail", parse: str },
  { key: "inboundSmtpPort", env: "MAILSVC_INBOUND_SMTP_PORT", flag: "--inbound-smtp-port", help: "inbound SMTP listener port (0 = off)", parse: int("inbound smtp port") },
  { key: "inboundTlsCert", env: "MAILSVC_INBOUND_TLS_CERT", flag: "--inbound-tls-cert", help: "PEM certificate (chain) file for inbound STARTTLS", parse: str },
  { key: "inboundTlsKey", env: "MAILSVC_INBOUND_TLS_KEY", flag: "--inbound-tls-key", help: "PEM private key file for inbound STARTTLS", parse: str },
  { key: "inboundMaxBytes", env: "MAILSVC_INBOUND_MAX_BYTES", flag: "--inbound-max-bytes", help: "largest inbound message accepted, in bytes", parse: int("inbound max bytes") },
  { key: "tlsCert", env: "MAILSVC_TLS_CERT", flag: "--tls-cert", help: "PEM certificate (chain) file for SMTP submission (and inbound STARTTLS when its own is unset)", parse: str },
  { key: "tlsKey", env: "MAILSVC_TLS_KEY", flag: "--tls-key", help: "PEM private key file for SMTP submission (and inbound STARTTLS when its own is unset)", parse: str },
  { key: "submissionPort", env: "MAILSVC_SUBMISSION_PORT", flag: "--submission-port", help: "SMTP submission port, STARTTLS (0 = off; 587 suggested)", parse: int("submission port") },
  { key: "submissionTlsPort", env: "MAILSVC_SUBMISSION_TLS_PORT", flag: "--submission-tls-port", help: "SMTP submission port with implicit TLS (0 = off; 465 suggested)", parse: int("submission tls port") },
  { key: "systemFrom", env: "MAILSVC_SYSTEM_FROM", flag: "--system-from", help: "sender of account emails", parse: str },
  { key: "rateLimit", env: "MAILSVC_RATE_LIMIT", flag: "--rate-limit", help: "API requests per minute per project", parse: int("rate limit") },
  { key: "idempotencyTtlHours", env: "MAILSVC_IDEMPOTENCY_TTL_HOURS", flag: "--idempotency-ttl-hours", help: "how long an Idempotency-Key is remembered", parse: int("idempotency ttl") },
  { key: "domainCheckIntervalMs", env: "MAILSVC_DOMAIN_CHECK_INTERVAL", flag: "--domain-check-interval", help: "background DNS re-verification interval", parse: parseDuration },
  { key: "segmentSweepIntervalMs", env: "MAILSVC_SEGMENT_SWEEP_INTERVAL", flag: "--segment-sweep-interval", help: "re-evaluation of tracked segments (time-relative conditions) and memberCount refresh", parse: parseDuration },
  { key: "retryScheduleMs", env: "MAILSVC_RETRY_SCHEDULE", flag: "--retry-schedule", help: "waits between delivery attempts after a deferral", parse: (s) => list(s).map(parseDuration) },
  { key: "logRequests", env: "MAILSVC_LOG_REQUESTS", flag: "--log-requests", help: "one log line per HTTP request", parse: bool },
  { key: "allowPrivateWebhooks", env: "MAILSVC_ALLOW_PRIVATE_WEBHOOKS", flag: "--allow-private-webhooks", help: "let workflow and outbound webhooks reach loopback/private addresses", parse: bool },
  { key: "webhookRetryScheduleMs", env: "MAILSVC_WEBHOOK_RETRY_SCHEDULE", flag: "--webhook-retry-schedule", help: "waits between webhook attempts after a non-2xx or network failure", parse: (s) => list(s).map(parseDuration) },
  { key: "webhookMaxDeferMs", env: "MAILSVC_WEBHOOK_MAX_DEFER", flag: "--webhook-max-defer", help: "while mail goes out in bulk (over 100 attempts/s), webhook POSTs wait for it up to this long (0: never)", parse: parseDuration },
  { key: "mtaSts", env: "MAILSVC_MTA_STS", flag: "--mta-sts", help: "honour recipients' MTA-STS policies (enforce: verified TLS to listed MX only)", parse: bool },
  { key: "mtaStsCa", env: "MAILSVC_MTA_STS_CA", flag: "--mta-sts-ca", help: "PEM file of extra CAs trusted for MTA-STS policy hosts and MX certificates", parse: str },
  { key: "mtaStsPort", env: "MAILSVC_MTA_STS_PORT", flag: "--mta-sts-port", help: "HTTPS port of MTA-STS policy hosts", parse: int("mta-sts port") },
  { key: "dkimOpenssl", env: "MAILSVC_DKIM_OPENSSL", flag: "--dkim-openssl", help: "sign DKIM RSA keys with the system's OpenSSL 3 when present (default true; false: Bun's WebCrypto)", parse: bool },
  { key: "analyticsRollups", env: "MAILSVC_ANALYTICS_ROLLUPS", flag: "--analytics-rollups", help: "fold new events into the analytics rollups (off: aggregates stay exact but read the events; for benchmarks)", parse: bool },
  { key: "sandbox", env: "MAILSVC_SANDBOX", flag: "--sandbox", help: "make every project a sandbox: mail is captured (GET /emails/:id/raw), never sent", parse: bool },
  { key: "keepRaw", env: "MAILSVC_KEEP_RAW", flag: "--keep-raw", help: "keep every sent message as handed to SMTP for GET /emails/:id/raw (sandbox mail always is)", parse: bool },
  { key: "metricsToken", env: "MAILSVC_METRICS_TOKEN", flag: "--metrics-token", help: "bearer token required by /metrics", parse: str },
  { key: "campaignBatchSize", env: "MAILSVC_CAMPAIGN_BATCH_SIZE", flag: "--campaign-batch-size", help: "contacts written per campaign fan-out transaction", parse: int("campaign batch size") },
  { key: "sendRate", env: "MAILSVC_SEND_RATE", flag: "--send-rate", help: "outbound messages per second per project (default unlimited)", parse: int("send rate") },
  { key: "stripeSecretKey", env: "MAILSVC_STRIPE_SECRET_KEY", flag: "--stripe-secret-key", help: "Stripe secret key (billing is off without it)", parse: str },
  { key: "stripeWebhookSecret", env: "MAILSVC_STRIPE_WEBHOOK_SECRET", flag: "--stripe-webhook-secret", help: "signing secret of the Stripe webhook (whsec_…)", parse: str },
  { key: "stripePriceId", env: "MAILSVC_STRIPE_PRICE_ID", flag: "--stripe-price-id", help: "Stripe price of the subscription sold by checkout", parse: str },
  { key: "stripeApiBase", env: "MAILSVC_STRIPE_API_BASE", flag: "--stripe-api-base", help: "Stripe API base URL (default https://api.stripe.com)", parse: (s) => s.replace(/\/+$/, "") },
];

export const DEFAULT_RETRY_SCHEDULE = "5m,15m,1h,3h,6h,12h,24h,24h,24h";
export const DEFAULT_WEBHOOK_RETRY_SCHEDULE = "10s,1m,5m,30m,2h,6h,12h";

function defaults(): Omit<Config, "publicUrl"> & { publicUrl?: string } {
  return {
    db: "./data/mailsvc.db",
    instanceId: `${hostname() || "localhost"}-${process.pid}`,
    leaseMs: 60_000,
    host: "0.0.0.0",
    port: 3000,
    hostname: hostname() || "localhost",
    disableSignups: false,
    dnsServers: [],
    mxPort: 25,
    inboundSmtpPort: 0,
    inboundMaxBytes: 50 * 1024 * 1024,
    submissionPort: 0,
    submissionTlsPort: 0,
    rateLimit: 1000,
    idempotencyTtlHours: 24,
    domainCheckIntervalMs: 5 * 60_000,
    segmentSweepIntervalMs: 5 * 60_000,
    retryScheduleMs: list(DEFAULT_RETRY_SCHEDULE).map(parseDuration),
    logRequests: true,
    allowPrivateWebhooks: false,
    campaignBatchSize: 1000,
    webhookRetryScheduleMs: list(DEFAULT_WEBHOOK_RETRY_SCHEDULE).map(parseDuration),
    webhookMaxDeferMs: 30_000,
    mtaSts: true,
    mtaStsPort: 443,
    analyticsRollups: true,
    dkimOpenssl: true,
    sandbox: false,
    keepRaw: false,
  };
}

/**
 * The certificate and key files a listener uses: its own pair when either is set (inbound:
 * MAILSVC_INBOUND_TLS_*), else the shared MAILSVC_TLS_CERT/KEY, else the other listener's pair; null
 * when the pair is incomplete. One certificate for the host usually serves both listeners.
 */
export function tlsFilesFor(c: Config, listener: "inbound" | "submission"): { certFile: string; keyFile: string } | null {
  const inbound = c.inboundTlsCert || c.inboundTlsKey ? { cert: c.inboundTlsCert, key: c.inboundTlsKey } : null;
  const shared = c.tlsCert || c.tlsKey ? { cert: c.tlsCert, key: c.tlsKey } : null;
  const pair = listener === "inbound" ? (inbound ?? shared) : (shared ?? inbound);
  return pair?.cert && pair.key ? { certFile: pair.cert, keyFile: pair.key } : null;
}

/**
 * Builds the config from defaults, then environment, then flags (flags win).
 * `overrides` lets tests and the harness pass values directly.
 */
export function loadConfig(
  env: Record<string, string | undefined> = process.env,
  flags: Record<string, string> = {},
  overrides: Partial<Config> = {},
): Config {
  const cfg: Record<string, unknown> = { ...defaults() };
  for (const opt of OPTIONS) {
    const fromFlag = flags[opt.flag];
    const fromEnv = env[opt.env];
    const raw = fromFlag ?? fromEnv;
    if (raw !== undefined && raw !== "") cfg[opt.key] = opt.parse(raw);
  }
  Object.assign(cfg, overrides);
  const dbGiven = flags["--db"] ?? env.MAILSVC_DB ?? overrides.db;
  if (cfg.databaseUrl && dbGiven) {
    throw new ConfigError("MAILSVC_DATABASE_URL (--database-url) and MAILSVC_DB (--db) are both set: choose one engine, PostgreSQL or the SQLite file");
  }
  if (!cfg.publicUrl) cfg.publicUrl = `http://localhost:${cfg.port}`;
  return cfg as unknown as Config;
}

/** Splits argv into positional words and `--flag value` / `--flag=value` / boolean `--flag` pairs. */
export function parseArgv(argv: string[]): { positional: string[]; flags: Record<string, string> } {
  const positional: string[] = [];
  const flags: Record<string, string> = {};
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a.startsWith("--")) {
      const eq = a.indexOf("=");
      if (eq > 0) flags[a.slice(0, eq)] = a.slice(eq + 1);
      else if (i + 1 < argv.length && !argv[i + 1]!.startsWith("--")) flags[a] = argv[++i]!;
      else flags[a] = "true";
    } else positional.push(a);
  }
  return { positional, flags };
}
