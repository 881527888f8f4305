import { isValidDataKey } from "../data-rules";
import { EMAIL_EVENT_KINDS, EVENT_OPS, type FieldRef } from "./types";

export type Mode = "segment" | "workflow";

/**
 * What a filter's `field` addresses, or null for an unknown form. In workflow mode `event.<key>`
 * with a non-triggered operator is a key of the triggering event's data, and `workflow.<key>` a key
 * of the execution context.
 */
export function parseField(field: string, operator: string, mode: Mode = "segment"): FieldRef | null {
  switch (field) {
    case "email":
    case "subscribed":
    case "createdAt":
    case "updatedAt":
      return { kind: field };
  }
  const dot = field.indexOf(".");
  if (dot <= 0 || dot === field.length - 1) return null;
  const head = field.slice(0, dot);
  const rest = field.slice(dot + 1);
  switch (head) {
    case "data":
      return isValidDataKey(rest) ? { kind: "data", key: rest } : null;
    case "event":
      if (mode === "workflow" && !EVENT_OPS.has(operator)) return { kind: "fact", source: "event", key: rest };
      return rest.length <= 255 ? { kind: "event", name: rest } : null;
    case "email":
      return EMAIL_EVENT_KINDS.has(rest) ? { kind: "event", name: `email.${rest}` } : null;
    case "segment":
      return rest.length <= 100 ? { kind: "segment", id: rest } : null;
    case "workflow":
      return mode === "workflow" ? { kind: "fact", source: "workflow", key: rest } : null;
  }
  return null;
}
