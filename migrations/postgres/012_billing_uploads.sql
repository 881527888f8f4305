-- Billing (monthly caps per category, Stripe subscription state, invoices, processed webhook events)
-- and image uploads (stored in the database so the one-file backup holds them).

-- Per-project caps; NULL means unlimited. No row: every category unlimited.
CREATE TABLE billing_limits (
  project_id text COLLATE "C" PRIMARY KEY REFERENCES projects(id) ON DELETE CASCADE,
  transactional bigint,
  campaigns bigint,
  workflows bigint,
  inbound bigint,
  updated_at bigint NOT NULL
);

-- Consumption per calendar month (UTC). period_start: epoch ms of the month's first instant.
-- category: transactional | campaigns | workflows | inbound. dropped: refused over the cap (inbound).
CREATE TABLE billing_usage (
  project_id text COLLATE "C" NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
  period_start bigint NOT NULL,
  category text COLLATE "C" NOT NULL,
  used bigint NOT NULL DEFAULT 0,
  dropped bigint NOT NULL DEFAULT 0,
  PRIMARY KEY (project_id, period_start, category)
);

-- The payment provider's view of a project (Stripe customer and subscription), kept by its webhook.
CREATE TABLE billing_subscriptions (
  project_id text COLLATE "C" PRIMARY KEY REFERENCES projects(id) ON DELETE CASCADE,
  customer_id text COLLATE "C",
  subscription_id text COLLATE "C",
  status text COLLATE "C",
  price_id text COLLATE "C",
  current_period_end bigint,
  updated_at bigint NOT NULL
);
CREATE UNIQUE INDEX billing_subscriptions_customer ON billing_subscriptions (customer_id);

CREATE TABLE billing_invoices (
  id text COLLATE "C" PRIMARY KEY,                  -- the provider's invoice id
  project_id text COLLATE "C" NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
  number text COLLATE "C",
  status text COLLATE "C",
  currency text COLLATE "C",
  amount_due bigint NOT NULL DEFAULT 0,
  amount_paid bigint NOT NULL DEFAULT 0,
  hosted_invoice_url text COLLATE "C",
  invoice_pdf text COLLATE "C",
  period_start bigint,
  period_end bigint,
  created_at bigint NOT NULL,
  updated_at bigint NOT NULL
);
CREATE INDEX billing_invoices_project ON billing_invoices (project_id, created_at);

-- Webhook events already applied (idempotency per event id: a replay is ignored).
CREATE TABLE billing_events (
  id text COLLATE "C" PRIMARY KEY,
  type text COLLATE "C" NOT NULL,
  received_at bigint NOT NULL
);

-- Uploaded images. ext: png | jpg | gif | webp (the public URL is /uploads/<id>.<ext>).
CREATE TABLE uploads (
  id text COLLATE "C" PRIMARY KEY,
  project_id text COLLATE "C" NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
  filename text COLLATE "C",
  content_type text COLLATE "C" NOT NULL,
  ext text COLLATE "C" NOT NULL,
  size bigint NOT NULL,
  data bytea NOT NULL,
  created_at bigint NOT NULL
);
CREATE INDEX uploads_project ON uploads (project_id, id);
