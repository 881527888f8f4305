import { parseField } from "./fields";
import type { ConditionTree } from "./types";

/** Every data field (`data.<name>` as `<name>`), event name and segment id a tree references. */
export function conditionReferences(tree: ConditionTree | null | undefined, mode: "segment" | "workflow" = "segment"): {
  fields: string[];
  events: string[];
  segments: string[];
} {
  const fields = new Set<string>();
  const events = new Set<string>();
  const segments = new Set<string>();
  const walk = (t: ConditionTree | null | undefined, depth: number) => {
    if (!t || typeof t !== "object" || !Array.isArray(t.groups) || depth > 20) return;
    for (const g of t.groups) {
      if (!g || typeof g !== "object") continue;
      for (const f of Array.isArray(g.filters) ? g.filters : []) {
        if (!f || typeof f.field !== "string") continue;
        const ref = parseField(f.field, String(f.operator), mode);
        if (ref?.kind === "data") fields.add(ref.key);
        else if (ref?.kind === "event") events.add(ref.name);
        else if (ref?.kind === "segment") segments.add(ref.id);
      }
      walk(g.conditions, depth + 1);
    }
  };
  walk(tree, 0);
  return { fields: [...fields], events: [...events], segments: [...segments] };
}
