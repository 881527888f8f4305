// What a database error means, on either engine (the driver's codes differ: SQLite's extended result
// codes, PostgreSQL's SQLSTATE).

const codeOf = (e: unknown) => String((e as { code?: unknown })?.code ?? "");

/** A UNIQUE or PRIMARY KEY constraint refused the write (usually a concurrent request got there first). */
export function isUniqueViolation(e: unknown): boolean {
  const c = codeOf(e);
  return c === "23505" || c === "SQLITE_CONSTRAINT_UNIQUE" || c === "SQLITE_CONSTRAINT_PRIMARYKEY";
}

/** A FOREIGN KEY constraint refused the write (what it points at was deleted meanwhile). */
export function isForeignKeyViolation(e: unknown): boolean {
  const c = codeOf(e);
  return c === "23503" || c === "SQLITE_CONSTRAINT_FOREIGNKEY";
}

/** PostgreSQL gave up on a transaction that collided with another (deadlock, serialization): retryable. */
export function isTransientConflict(e: unknown): boolean {
  const c = codeOf(e);
  return c === "40P01" || c === "40001";
}
