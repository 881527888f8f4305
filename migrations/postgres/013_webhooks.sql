-- Outbound webhooks: endpoints a project registers, and one delivery row per (event, endpoint).
-- The delivery rows are the durable queue of the webhook dispatcher: PENDING rows whose
-- next_attempt_at has come are attempted; a restart finds them where they were.
CREATE TABLE webhook_endpoints (
  id text COLLATE "C" PRIMARY KEY,
  project_id text COLLATE "C" NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
  url text COLLATE "C" NOT NULL,
  description text COLLATE "C",
  secret text COLLATE "C" NOT NULL,
  events text COLLATE "C" NOT NULL,                   -- JSON array of subscribed names / patterns
  enabled bigint NOT NULL DEFAULT 1,
  created_at bigint NOT NULL,
  updated_at bigint NOT NULL
);
CREATE INDEX webhook_endpoints_project ON webhook_endpoints (project_id, id);

CREATE TABLE webhook_deliveries (
  id text COLLATE "C" PRIMARY KEY,                    -- also the webhook-id header, stable across retries
  project_id text COLLATE "C" NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
  endpoint_id text COLLATE "C" NOT NULL REFERENCES webhook_endpoints(id) ON DELETE CASCADE,
  event_id text COLLATE "C",                          -- the events row (NULL for a test ping)
  event text COLLATE "C" NOT NULL,                    -- event name, the payload's `type`
  payload text COLLATE "C" NOT NULL,                  -- the exact JSON body sent on every attempt
  status text COLLATE "C" NOT NULL,                   -- PENDING | DELIVERED | FAILED
  attempts bigint NOT NULL DEFAULT 0,
  next_attempt_at bigint,
  response_status bigint,
  response_body text COLLATE "C",
  error text COLLATE "C",
  created_at bigint NOT NULL,
  updated_at bigint NOT NULL,
  delivered_at bigint
);
CREATE INDEX webhook_deliveries_endpoint ON webhook_deliveries (endpoint_id, id);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (endpoint_id, next_attempt_at) WHERE status = 'PENDING';
