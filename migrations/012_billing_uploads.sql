-- Billing (monthly caps per category, Stripe subscription state, invoices, processed webhook events)
-- and image uploads (stored in the database so the one-file backup holds them).

-- Per-project caps; NULL means unlimited. No row: every category unlimited.
CREATE TABLE billing_limits (
  project_id TEXT PRIMARY KEY REFERENCES projects(id) ON DELETE CASCADE,
  transactional INTEGER,
  campaigns INTEGER,
  workflows INTEGER,
  inbound INTEGER,
  updated_at INTEGER NOT NULL
);

-- Consumption per calendar month (UTC). period_start: epoch ms of the month's first instant.
-- category: transactional | campaigns | workflows | inbound. dropped: refused over the cap (inbound).
CREATE TABLE billing_usage (
  project_id TEXT NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
  period_start INTEGER NOT NULL,
  category TEXT NOT NULL,
  used INTEGER NOT NULL DEFAULT 0,
  dropped INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (project_id, period_start, category)
);

-- The payment provider's view of a project (Stripe customer and subscription), kept by its webhook.
CREATE TABLE billing_subscriptions (
  project_id TEXT PRIMARY KEY REFERENCES projects(id) ON DELETE CASCADE,
  customer_id TEXT,
  subscription_id TEXT,
  status TEXT,
  price_id TEXT,
  current_period_end INTEGER,
  updated_at INTEGER NOT NULL
);
CREATE UNIQUE INDEX billing_subscriptions_customer ON billing_subscriptions (customer_id);

CREATE TABLE billing_invoices (
  id TEXT PRIMARY KEY,                  -- the provider's invoice id
  project_id TEXT NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
  number TEXT,
  status TEXT,
  currency TEXT,
  amount_due INTEGER NOT NULL DEFAULT 0,
  amount_paid INTEGER NOT NULL DEFAULT 0,
  hosted_invoice_url TEXT,
  invoice_pdf TEXT,
  period_start INTEGER,
  period_end INTEGER,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
);
CREATE INDEX billing_invoices_project ON billing_invoices (project_id, created_at);

-- Webhook events already applied (idempotency per event id: a replay is ignored).
CREATE TABLE billing_events (
  id TEXT PRIMARY KEY,
  type TEXT NOT NULL,
  received_at INTEGER NOT NULL
);

-- Uploaded images. ext: png | jpg | gif | webp (the public URL is /uploads/<id>.<ext>).
CREATE TABLE uploads (
  id TEXT PRIMARY KEY,
  project_id TEXT NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
  filename TEXT,
  content_type TEXT NOT NULL,
  ext TEXT NOT NULL,
  size INTEGER NOT NULL,
  data BLOB NOT NULL,
  created_at INTEGER NOT NULL
);
CREATE INDEX uploads_project ON uploads (project_id, id);
