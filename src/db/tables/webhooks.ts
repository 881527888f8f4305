import type { Generated } from "kysely";

export type WebhookDeliveryStatus = "PENDING" | "DELIVERED" | "FAILED";

export interface WebhookEndpointsTable {
  id: string;
  project_id: string;
  url: string;
  description: string | null;
  secret: string;
  /** JSON array of names / patterns. */
  events: string;
  enabled: number;
  created_at: number;
  updated_at: number;
}

export interface WebhookDeliveriesTable {
  id: string;
  project_id: string;
  endpoint_id: string;
  event_id: string | null;
  event: string;
  payload: string;
  status: WebhookDeliveryStatus;
  attempts: number;
  next_attempt_at: number | null;
  response_status: number | null;
  response_body: string | null;
  error: string | null;
  created_at: number;
  updated_at: number;
  delivered_at: number | null;
  /** The instance sending it (PostgreSQL, migration 026); cleared by the attempt's outcome. */
  locked_by: Generated<string | null>;
}

export interface WebhookTables {
  webhook_endpoints: WebhookEndpointsTable;
  webhook_deliveries: WebhookDeliveriesTable;
}
