// The condition-tree builder shared by segments, campaign audiences and workflow CONDITION steps.
// Tree: { logic: AND|OR, groups: [{ filters: [{ field, operator, value?, unit? }], conditions? }] }.
import { useEffect, useId, useState } from "react";
import { api, listOf } from "../api";
import { Field } from "../ui";

export interface Filter {
  field: string;
  operator: string;
  value?: unknown;
  unit?: string;
}
export interface Group {
  filters: Filter[];
  conditions?: Tree;
}
export interface Tree {
  logic: "AND" | "OR";
  groups: Group[];
}

export const emptyTree = (): Tree => ({ logic: "AND", groups: [{ filters: [] }] });

const STRING_OPS = ["equals", "notEquals", "contains", "notContains", "startsWith", "endsWith"];
const COMPARE_OPS = ["greaterThan", "lessThan", "greaterThanOrEqual", "lessThanOrEqual"];
const EVENT_OPS = ["triggered", "notTriggered", "triggeredWithin", "triggeredOlderThan", "notTriggeredWithin"];
const SEGMENT_OPS = ["memberOfSegment", "notMemberOfSegment"];
const VALUELESS = new Set(["exists", "notExists", "triggered", "notTriggered", "memberOfSegment", "notMemberOfSegment"]);
const TIMED = new Set(["within", "olderThan", "triggeredWithin", "triggeredOlderThan", "notTriggeredWithin"]);
const UNITS = ["minutes", "hours", "days", "weeks"];
const LABELS: Record<string, string> = {
  equals: "equals", notEquals: "does not equal", contains: "contains", notContains: "does not contain", startsWith: "starts with", endsWith: "ends with",
  greaterThan: ">", lessThan: "<", greaterThanOrEqual: "≥", lessThanOrEqual: "≤", exists: "exists", notExists: "does not exist",
  within: "within the last", olderThan: "older than", triggered: "happened", notTriggered: "never happened", triggeredWithin: "happened within the last",
  triggeredOlderThan: "last happened more than", notTriggeredWithin: "did not happen within the last", memberOfSegment: "is a member", notMemberOfSegment: "is not a member",
};

export function operatorsFor(field: string): string[] {
  if (field === "email") return STRING_OPS;
  if (field === "subscribed") return ["equals", "notEquals"];
  if (field === "createdAt" || field === "updatedAt") return [...COMPARE_OPS, "within", "olderThan"];
  if (field.startsWith("event.") || field.startsWith("email.")) return EVENT_OPS;
  if (field.startsWith("segment.")) return SEGMENT_OPS;
  return [...STRING_OPS, ...COMPARE_OPS, "exists", "notExists", "within", "olderThan"];
}

/** The value as the API expects it: booleans for `subscribed`, numbers for timed operators and numeric data. */
function coerce(field: string, operator: string, raw: string, numericFields: Set<string>): unknown {
  if (field === "subscribed") return raw === "true";
  if (TIMED.has(operator)) return raw === "" ? "" : Number(raw);
  if (numericFields.has(field) && raw !== "" && !Number.isNaN(Number(raw))) return Number(raw);
  return raw;
}

interface FieldOptions {
  suggestions: { value: string; label: string }[];
  numeric: Set<string>;
}

/** Field suggestions: standard fields, custom data fields, tracked event names, email events, segments. */
export function useFieldOptions(extra: string[] = []): FieldOptions {
  const [opts, setOpts] = useState<FieldOptions>({ suggestions: [], numeric: new Set() });
  useEffect(() => {
    let live = true;
    void (async () => {
      const [fields, names, segments] = await Promise.all([
        api<any>("/contacts/fields").catch(() => ({ custom: [] })),
        api<any>("/events/names").catch(() => []),
        api<any>("/segments").catch(() => []),
      ]);
      const s: { value: string; label: string }[] = [
        { value: "email", label: "Email address" },
        { value: "subscribed", label: "Subscribed" },
        { value: "createdAt", label: "Created at" },
        { value: "updatedAt", label: "Updated at" },
      ];
      const numeric = new Set<string>();
      for (const f of fields.custom ?? []) {
        const path = f.path ?? `data.${f.name}`;
        s.push({ value: path, label: `Contact data: ${f.name}` });
        if (f.type === "number") numeric.add(path);
      }
      for (const n of listOf<any>(names)) {
        const name = typeof n === "string" ? n : n.name;
        if (!name || name.startsWith("email.")) continue;
        s.push({ value: `event.${name}`, label: `Event: ${name}` });
      }
      for (const k of ["sent", "delivery", "open", "click", "bounce", "complaint"]) s.push({ value: `email.${k}`, label: `Email ${k}` });
      for (const seg of listOf<any>(segments)) s.push({ value: `segment.${seg.id}`, label: `Segment: ${seg.name}` });
      for (const e of extra) s.push({ value: e, label: e });
      if (live) setOpts({ suggestions: s, numeric });
    })();
    return () => {
      live = false;
    };
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, []);
  return opts;
}

function FilterRow({ f, onChange, onRemove, path, options }: { f: Filter; onChange: (f: Filter) => void; onRemove: () => void; path: string; options: FieldOptions }) {
  const id = useId();
  const ops = operatorsFor(f.field);
  const raw = f.value === undefined || f.value === null ? "" : String(f.value);
  return (
    <div className="cond-filter" role="group" aria-label={`Filter ${path}`}>
      <Field label="Field">
        {(fid) => (
          <>
            <input
              id={fid}
              list={`${id}-list`}
              value={f.field}
              placeholder="data.plan"
              onChange={(e) => {
                const field = e.target.value;
                const nextOps = operatorsFor(field);
                onChange({ ...f, field, operator: nextOps.includes(f.operator) ? f.operator : nextOps[0]! });
              }}
            />
            <datalist id={`${id}-list`}>
              {options.suggestions.map((s) => (
                <option key={s.value} value={s.value}>
                  {s.label}
                </option>
              ))}
            </datalist>
          </>
        )}
      </Field>
      <Field label="Operator">
        {(oid) => (
          <select
            id={oid}
            value={f.operator}
            onChange={(e) => {
              const operator = e.target.value;
              const next: Filter = { field: f.field, operator };
              if (!VALUELESS.has(operator)) next.value = f.value;
              if (TIMED.has(operator)) next.unit = f.unit ?? "days";
              onChange(next);
            }}
          >
            {ops.map((o) => (
              <option key={o} value={o}>
                {LABELS[o] ?? o}
              </option>
            ))}
          </select>
        )}
      </Field>
      {!VALUELESS.has(f.operator) && (
        <Field label="Value">
          {(vid) =>
            f.field === "subscribed" ? (
              <select id={vid} value={raw || "true"} onChange={(e) => onChange({ ...f, value: e.target.value === "true" })}>
                <option value="true">true</option>
                <option value="false">false</option>
              </select>
            ) : (
              <input id={vid} value={raw} type={TIMED.has(f.operator) ? "number" : "text"} onChange={(e) => onChange({ ...f, value: coerce(f.field, f.operator, e.target.value, options.numeric) })} />
            )
          }
        </Field>
      )}
      {TIMED.has(f.operator) && (
        <Field label="Unit">
          {(uid) => (
            <select id={uid} value={f.unit ?? "days"} onChange={(e) => onChange({ ...f, unit: e.target.value })}>
              {UNITS.map((u) => (
                <option key={u}>{u}</option>
              ))}
            </select>
          )}
        </Field>
      )}
      <button type="button" className="small" onClick={onRemove} aria-label={`Remove filter ${path}`}>
        Remove
      </button>
    </div>
  );
}

export function ConditionBuilder({ value, onChange, label = "Conditions" }: { value: Tree; onChange: (t: Tree) => void; label?: string }) {
  const options = useFieldOptions();
  const id = useId();
  const setGroup = (i: number, g: Group) => onChange({ ...value, groups: value.groups.map((x, j) => (j === i ? g : x)) });
  return (
    <fieldset className="conditions">
      <legend>{label}</legend>
      <div className="row">
        <label htmlFor={`${id}-logic`}>Match</label>
        <select id={`${id}-logic`} value={value.logic} onChange={(e) => onChange({ ...value, logic: e.target.value as Tree["logic"] })}>
          <option value="AND">all groups (AND)</option>
          <option value="OR">any group (OR)</option>
        </select>
      </div>
      {value.groups.map((g, gi) => (
        <div className="cond-group" key={gi} role="group" aria-label={`Group ${gi + 1}`}>
          <div className="hint">Group {gi + 1}: every filter must match{g.filters.length === 0 ? " (no filters: matches every contact)" : ""}</div>
          {g.filters.map((f, fi) => (
            <FilterRow
              key={fi}
              f={f}
              path={`${gi + 1}.${fi + 1}`}
              options={options}
              onChange={(nf) => setGroup(gi, { ...g, filters: g.filters.map((x, j) => (j === fi ? nf : x)) })}
              onRemove={() => setGroup(gi, { ...g, filters: g.filters.filter((_, j) => j !== fi) })}
            />
          ))}
          {g.conditions && <div className="hint">This group also has a nested condition tree (kept as is).</div>}
          <div className="row">
            <button type="button" className="small" onClick={() => setGroup(gi, { ...g, filters: [...g.filters, { field: "email", operator: "contains", value: "" }] })}>
              Add filter
            </button>
            {value.groups.length > 1 && (
              <button type="button" className="small" onClick={() => onChange({ ...value, groups: value.groups.filter((_, j) => j !== gi) })}>
                Remove group
              </button>
            )}
          </div>
        </div>
      ))}
      <button type="button" className="small" onClick={() => onChange({ ...value, groups: [...value.groups, { filters: [] }] })}>
        Add group
      </button>
    </fieldset>
  );
}

/** Live number of contacts matching a tree (debounced); null while unknown. */
export function useLiveCount(tree: Tree | null, extra: Record<string, unknown> = {}): { count: number | null; error: string | null } {
  const [state, setState] = useState<{ count: number | null; error: string | null }>({ count: null, error: null });
  const key = JSON.stringify([tree, extra]);
  useEffect(() => {
    if (!tree) return;
    const t = setTimeout(() => {
      api<{ count: number }>("/audience/count", { body: { condition: tree, ...extra } }).then(
        (r) => setState({ count: r.count, error: null }),
        (e) => setState({ count: null, error: e.message }),
      );
    }, 300);
    return () => clearTimeout(t);
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [key]);
  return state;
}
