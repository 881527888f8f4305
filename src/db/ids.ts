/**
 * Ids are UUIDv7 of the service clock, so id order is time order and a time window is an id range.
 * `idAtTime(ms)` is the id prefix of that millisecond: `id >= idAtTime(a) AND id < idAtTime(b)` selects
 * the rows created in [a, b).
 */
export function idAtTime(ms: number): string {
  const hex = Math.max(0, Math.floor(ms)).toString(16).padStart(12, "0");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}`;
}

/** Creation time encoded in a UUIDv7 id. */
export function timeOfId(id: string): number {
  return parseInt(id.slice(0, 8) + id.slice(9, 13), 16);
}
