import type { Kysely, Transaction } from "kysely";
import type { DB } from "../db";
import type { WebhookDeliveryStatus } from "../db/tables/webhooks";

type Db = Kysely<DB> | Transaction<DB>;

export const getEndpoint = (db: Db, projectId: string, id: string) =>
  db.selectFrom("webhook_endpoints").selectAll().where("project_id", "=", projectId).where("id", "=", id).executeTakeFirst();

export type EndpointRow = NonNullable<Awaited<ReturnType<typeof getEndpoint>>>;

/** Newest first by id (UUIDv7): the cursor is the last id seen. */
export function listEndpoints(db: Db, projectId: string, afterId: string | null, limit: number) {
  let q = db.selectFrom("webhook_endpoints").selectAll().where("project_id", "=", projectId);
  if (afterId) q = q.where("id", "<", afterId);
  return q.orderBy("id", "desc").limit(limit + 1).execute();
}

export async function countEndpoints(db: Db, projectId: string): Promise<number> {
  const r = await db.selectFrom("webhook_endpoints").select((eb) => eb.fn.countAll<number>().as("n")).where("project_id", "=", projectId).executeTakeFirstOrThrow();
  return Number(r.n);
}

export const insertEndpoint = (db: Db, row: EndpointRow) => db.insertInto("webhook_endpoints").values(row).execute();

export const updateEndpoint = (db: Db, projectId: string, id: string, set: Partial<EndpointRow>) =>
  db.updateTable("webhook_endpoints").set(set).where("project_id", "=", projectId).where("id", "=", id).execute();

export async function deleteEndpoint(db: Db, projectId: string, id: string): Promise<boolean> {
  await db.deleteFrom("webhook_deliveries").where("project_id", "=", projectId).where("endpoint_id", "=", id).execute();
  const r = await db.deleteFrom("webhook_endpoints").where("project_id", "=", projectId).where("id", "=", id).executeTakeFirst();
  return Number(r.numDeletedRows) > 0;
}

/** Project reset: the delivery log goes with the events; endpoints are configuration and stay (like keys and domains). */
export async function deleteProjectDeliveries(db: Db, projectId: string): Promise<void> {
  await db.deleteFrom("webhook_deliveries").where("project_id", "=", projectId).execute();
}

export function listDeliveries(db: Db, projectId: string, endpointId: string, status: WebhookDeliveryStatus | undefined, afterId: string | null, limit: number) {
  let q = db.selectFrom("webhook_deliveries").selectAll().where("project_id", "=", projectId).where("endpoint_id", "=", endpointId);
  if (status) q = q.where("status", "=", status);
  if (afterId) q = q.where("id", "<", afterId);
  return q.orderBy("id", "desc").limit(limit + 1).execute();
}

export async function countDeliveries(db: Db, projectId: string, endpointId: string, status: WebhookDeliveryStatus | undefined): Promise<number> {
  let q = db.selectFrom("webhook_deliveries").select((eb) => eb.fn.countAll<number>().as("n")).where("project_id", "=", projectId).where("endpoint_id", "=", endpointId);
  if (status) q = q.where("status", "=", status);
  const r = await q.executeTakeFirstOrThrow();
  return Number(r.n);
}

export const getDelivery = (db: Db, id: string) => db.selectFrom("webhook_deliveries").selectAll().where("id", "=", id).executeTakeFirst();
export type DeliveryRow = NonNullable<Awaited<ReturnType<typeof getDelivery>>>;

export async function endpointIdsOf(db: Db, projectId: string): Promise<string[]> {
  return (await db.selectFrom("webhook_endpoints").select("id").where("project_id", "=", projectId).execute()).map((r) => r.id);
}
