import type { SelectQueryBuilder } from "kysely";

/** How many rows a filtered select would return (`SELECT count(*)` over its FROM and WHERE). */
export async function countRows<DB, TB extends keyof DB>(qb: SelectQueryBuilder<DB, TB, object>): Promise<number> {
  const r = await qb.select((eb) => eb.fn.countAll<number>().as("n")).executeTakeFirstOrThrow();
  return Number((r as { n: number | string }).n);
}
