-- Outbound webhooks: endpoints a project registers, and one delivery row per (event, endpoint).
-- The delivery rows are the durable queue of the webhook dispatcher: PENDING rows whose
-- next_attempt_at has come are attempted; a restart finds them where they were.
CREATE TABLE webhook_endpoints (
  id TEXT PRIMARY KEY,
  project_id TEXT NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
  url TEXT NOT NULL,
  description TEXT,
  secret TEXT NOT NULL,
  events TEXT NOT NULL,                   -- JSON array of subscribed names / patterns
  enabled INTEGER NOT NULL DEFAULT 1,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
);
CREATE INDEX webhook_endpoints_project ON webhook_endpoints (project_id, id);

CREATE TABLE webhook_deliveries (
  id TEXT PRIMARY KEY,                    -- also the webhook-id header, stable across retries
  project_id TEXT NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
  endpoint_id TEXT NOT NULL REFERENCES webhook_endpoints(id) ON DELETE CASCADE,
  event_id TEXT,                          -- the events row (NULL for a test ping)
  event TEXT NOT NULL,                    -- event name, the payload's `type`
  payload TEXT NOT NULL,                  -- the exact JSON body sent on every attempt
  status TEXT NOT NULL,                   -- PENDING | DELIVERED | FAILED
  attempts INTEGER NOT NULL DEFAULT 0,
  next_attempt_at INTEGER,
  response_status INTEGER,
  response_body TEXT,
  error TEXT,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  delivered_at INTEGER
);
CREATE INDEX webhook_deliveries_endpoint ON webhook_deliveries (endpoint_id, id);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (endpoint_id, next_attempt_at) WHERE status = 'PENDING';
