import { Background, Controls, Handle, Position, ReactFlow, type Connection, type Edge, type Node, type NodeProps } from "@xyflow/react";
import { useEffect, useMemo, useRef, useState } from "react";
import { Link, useLocation } from "wouter";
import { api, fmtDate, type OffsetPage } from "../api";
import { ConditionBuilder, emptyTree, type Tree } from "../components/conditions";
import { Badge, Checkbox, Empty, ErrorBanner, Loading, Modal, Notice, NumberInput, Page, Select, TextArea, TextInput, useAction, useAsync, usePoll, Table, DeleteButton } from "../ui";
import { Details } from "./activity";
import type { Template } from "./templates";
import { OpenTrackingField } from "../components/open-tracking";

interface Step {
  id: string;
  type: string;
  name: string | null;
  config: Record<string, unknown>;
  position?: { x: number; y: number } | null;
}
interface Transition {
  id: string;
  fromStepId: string;
  toStepId: string;
  branch: string | null;
}
interface Workflow {
  id: string;
  name: string;
  description: string | null;
  triggerType: string;
  triggerConfig: { eventName?: string } | null;
  enabled: boolean;
  allowReentry: boolean;
  entryStepId: string | null;
  createdAt: string;
  updatedAt: string;
  steps?: Step[];
  transitions?: Transition[];
}

const STEP_TYPES = ["SEND_EMAIL", "DELAY", "WAIT_FOR_EVENT", "CONDITION", "WEBHOOK", "UPDATE_CONTACT", "EXIT"] as const;
/** Step types in words. */
const STEP_LABELS: Record<string, string> = {
  SEND_EMAIL: "Send email",
  DELAY: "Wait",
  WAIT_FOR_EVENT: "Wait for an event",
  CONDITION: "Check a condition",
  WEBHOOK: "Call a webhook",
  UPDATE_CONTACT: "Update the contact",
  EXIT: "End the workflow",
};
export const stepLabel = (type: string) => STEP_LABELS[type] ?? type;
const BRANCH_LABELS: Record<string, string> = { yes: "Yes", no: "No", event: "Event arrived", timeout: "Timed out" };
const branchLabel = (b: string) => BRANCH_LABELS[b] ?? b;
/** The name a person gave the step (not the server's default, "Delay", nor the type's words). */
const customName = (s: Step): string | null => {
  const serverDefault = s.type.charAt(0) + s.type.slice(1).toLowerCase().replace(/_/g, " ");
  return s.name && s.name !== serverDefault && s.name !== stepLabel(s.type) ? s.name : null;
};
const stepTitle = (s: Step) => `${stepLabel(s.type)}${customName(s) ? `: ${customName(s)}` : ""}`;
const triggerText = (w: Workflow) => (w.triggerType === "MANUAL" ? "Started by hand or the API" : w.triggerConfig?.eventName ? `When the event “${w.triggerConfig.eventName}” is tracked` : "On an event (no event name yet)");
const DEFAULT_CONFIG: Record<string, Record<string, unknown>> = {
  SEND_EMAIL: { templateId: "" },
  DELAY: { amount: 1, unit: "hours" },
  WAIT_FOR_EVENT: { eventName: "purchase", timeout: 86400 },
  CONDITION: { field: "data.plan", operator: "equals", value: "pro" },
  WEBHOOK: { url: "https://example.com/hook", method: "POST" },
  UPDATE_CONTACT: { updates: {}, subscriptionAction: "none" },
  EXIT: { reason: "done" },
};

export function WorkflowsPage() {
  const list = useAsync(() => api<OffsetPage<Workflow>>("/workflows", { query: { pageSize: 100 } }), []);
  const [creating, setCreating] = useState(false);
  const [name, setName] = useState("");
  const [eventName, setEventName] = useState("");
  const act = useAction();
  const [, navigate] = useLocation();
  return (
    <Page title="Workflows" actions={<button type="button" className="primary" onClick={() => setCreating(true)}>New workflow</button>}>
      <ErrorBanner error={list.error} />
      {list.loading && !list.data ? <Loading /> : (list.data?.data ?? []).length === 0 ? <Empty>No workflows yet.</Empty> : (
        <Table head={["Name", "Trigger", "Enabled", "Updated"]}>
            {list.data?.data.map((w) => (
              <tr key={w.id}>
                <td><Link href={`/workflows/${w.id}`}>{w.name}</Link></td>
                <td>{triggerText(w)}</td>
                <td>{w.enabled ? <Badge tone="ok">enabled</Badge> : <Badge tone="muted">disabled</Badge>}</td>
                <td>{fmtDate(w.updatedAt)}</td>
              </tr>
            ))}
          </Table>
      )}
      <Modal open={creating} title="New workflow" onClose={() => setCreating(false)}>
        <form onSubmit={(e) => {
          e.preventDefault();
          void act.run(async () => {
            const w = await api<Workflow>("/workflows", { body: { name, triggerConfig: eventName ? { eventName } : undefined } });
            setCreating(false);
            navigate(`/workflows/${w.id}`);
          });
        }}>
          <ErrorBanner error={act.error} />
          <TextInput label="Workflow name" value={name} onChange={setName} required />
          <TextInput label="Trigger event name" value={eventName} onChange={setEventName} placeholder="signup, email.open, segment.vip.entry" />
          <button type="submit" className="primary" disabled={act.busy}>Create workflow</button>
        </form>
      </Modal>
    </Page>
  );
}

function StepNode({ data }: NodeProps) {
  const d = data as { step: Step; entry: boolean; templateName?: string };
  const name = customName(d.step);
  const sum = summary(d.step, d.templateName);
  const branches = d.step.type === "CONDITION" ? ["yes", "no"] : d.step.type === "WAIT_FOR_EVENT" ? ["event", "timeout"] : null;
  return (
    <div className={`flow-node${d.entry ? " entry" : ""}`} aria-label={`Step ${name ?? stepLabel(d.step.type)}`}>
      <Handle type="target" position={Position.Top} />
      <div className="flow-type">{stepLabel(d.step.type)}{d.entry ? " · first" : ""}</div>
      <div className="flow-name">{name ?? sum}</div>
      {name && sum !== name && sum !== stepLabel(d.step.type) && <div className="flow-summary">{sum}</div>}
      {d.step.type !== "EXIT" &&
        (branches ? (
          branches.map((b, i) => <Handle key={b} id={b} type="source" position={Position.Bottom} style={{ left: `${30 + i * 40}%` }} title={branchLabel(b)} />)
        ) : (
          <Handle type="source" position={Position.Bottom} />
        ))}
    </div>
  );
}
const nodeTypes = { step: StepNode };

function summary(s: Step, templateName?: string): string {
  const c = s.config ?? {};
  switch (s.type) {
    case "SEND_EMAIL": return c.templateId ? `“${templateName ?? "a template"}”` : "no template chosen yet";
    case "EXIT": return c.reason ? String(c.reason) : "end";
    case "DELAY": return `${c.amount} ${c.unit}`;
    case "WAIT_FOR_EVENT": return `until “${c.eventName}”`;
    case "WEBHOOK": return `${c.method ?? "POST"} ${c.url ?? ""}`;
    case "CONDITION": {
      const filters = Array.isArray(c.groups) ? (c.groups as { filters?: { field: string; operator: string; value?: unknown }[] }[]).flatMap((g) => g.filters ?? []) : c.field ? [c as { field: string; operator: string; value?: unknown }] : [];
      return filters.length ? filters.map((f) => `${f.field} ${f.operator}${f.value !== undefined ? ` ${String(f.value)}` : ""}`).join(c.logic === "OR" ? " or " : " and ") : "condition";
    }
    case "UPDATE_CONTACT": return Object.keys((c.updates as object) ?? {}).join(", ") || (c.subscriptionAction !== "none" ? String(c.subscriptionAction) : "update");
    default: return stepLabel(s.type);
  }
}

export function WorkflowPage({ id }: { id: string }) {
  const wf = useAsync(() => api<Workflow>(`/workflows/${id}`), [id]);
  if (wf.error) return <Page title="Workflow"><ErrorBanner error={wf.error} /></Page>;
  if (!wf.data) return <Loading />;
  return <WorkflowEditor wf={wf.data} reload={wf.reload} />;
}

function WorkflowEditor({ wf, reload }: { wf: Workflow; reload: () => void }) {
  const act = useAction();
  const [note, setNote] = useState("");
  const [selected, setSelected] = useState<string | null>(null);
  const [triggerType, setTriggerType] = useState<"EVENT" | "MANUAL">(wf.triggerType === "MANUAL" ? "MANUAL" : "EVENT");
  const [eventName, setEventName] = useState(wf.triggerConfig?.eventName ?? "");
  const [allowReentry, setAllowReentry] = useState(wf.allowReentry);
  const [newType, setNewType] = useState<string>("SEND_EMAIL");
  const [pendingBranch, setPendingBranch] = useState<Connection | null>(null);
  const [, navigate] = useLocation();
  const steps = wf.steps ?? [];
  const transitions = wf.transitions ?? [];
  const templates = useAsync(() => api<OffsetPage<Template>>("/templates", { query: { pageSize: 100 } }).then((p) => p.data), []);

  const nodes: Node[] = useMemo(
    () =>
      steps.map((s, i) => ({
        id: s.id,
        type: "step",
        position: s.position && typeof s.position.x === "number" ? { x: s.position.x, y: s.position.y } : { x: 80, y: 40 + i * 110 },
        data: { step: s, entry: s.id === wf.entryStepId, templateName: templates.data?.find((t) => t.id === s.config?.templateId)?.name },
        selected: s.id === selected,
      })),
    [steps, wf.entryStepId, selected, templates.data],
  );
  const edges: Edge[] = useMemo(
    () => transitions.map((t) => ({ id: t.id, source: t.fromStepId, target: t.toStepId, sourceHandle: t.branch ?? undefined, label: t.branch ?? undefined, animated: wf.enabled })),
    [transitions, wf.enabled],
  );

  const connect = (c: Connection, branch?: string | null) =>
    void act.run(async () => {
      await api(`/workflows/${wf.id}/transitions`, { body: { fromStepId: c.source, toStepId: c.target, branch: branch ?? c.sourceHandle ?? null } });
      reload();
    });

  const addStep = () =>
    void act.run(async () => {
      const n = steps.length;
      const config = newType === "SEND_EMAIL" ? { templateId: templates.data?.[0]?.id ?? "" } : DEFAULT_CONFIG[newType];
      const s = await api<Step>(`/workflows/${wf.id}/steps`, { body: { type: newType, config, position: { x: 80, y: 40 + n * 110 } } });
      // Chain it after the selected step (or the last one) when that step has no way out yet.
      const from = selected ? steps.find((x) => x.id === selected) : steps[steps.length - 1];
      if (from && from.type !== "EXIT" && !["CONDITION", "WAIT_FOR_EVENT"].includes(from.type) && !transitions.some((t) => t.fromStepId === from.id)) {
        await api(`/workflows/${wf.id}/transitions`, { body: { fromStepId: from.id, toStepId: s.id } });
      }
      setSelected(s.id);
      reload();
    });

  const selectedStep = steps.find((s) => s.id === selected) ?? null;

  return (
    <Page
      title={`Workflow: ${wf.name}`}
      actions={
        <>
          <button type="button" className={wf.enabled ? "" : "primary"} disabled={act.busy} onClick={() => void act.run(async () => {
            await api(`/workflows/${wf.id}`, { method: "PATCH", body: { enabled: !wf.enabled } });
            setNote(wf.enabled ? "Workflow disabled." : "Workflow enabled.");
            reload();
          })}>{wf.enabled ? "Disable" : "Enable"}</button>
          <DeleteButton what="workflow" name={wf.name} path={`/workflows/${wf.id}`} act={act} done={() => navigate("/workflows")} />
        </>
      }
    >
      <ErrorBanner error={act.error} />
      {note && <Notice kind="ok">{note}</Notice>}
      <p>
        Status: {wf.enabled ? <Badge tone="ok">enabled</Badge> : <Badge tone="muted">disabled</Badge>} · <span>{triggerText(wf)}</span>
      </p>
      <form className="row card" aria-label="Trigger" onSubmit={(e) => { e.preventDefault(); void act.run(async () => {
        setNote("");
        // An empty name is sent as no name: the server then says why an enabled EVENT workflow needs one (422).
        const name = eventName.trim();
        const triggerConfig = triggerType === "EVENT" && name ? { eventName: name } : {};
        await api(`/workflows/${wf.id}`, { method: "PATCH", body: { triggerType, triggerConfig, allowReentry } });
        setNote(triggerType === "EVENT" ? `Trigger saved: runs on the event ${name || "(no event name yet)"}.` : "Trigger saved: manual, started from this page or the API.");
        reload();
      }); }}>
        <Select label="Trigger" value={triggerType} onChange={setTriggerType} options={[{ value: "EVENT", label: "Event" }, { value: "MANUAL", label: "Manual" }]} />
        {triggerType === "EVENT" && <TextInput label="Trigger event name" value={eventName} onChange={setEventName} placeholder="signup, email.open, segment.vip.entry" />}
        <Checkbox label="Allow a contact to enter again" checked={allowReentry} onChange={setAllowReentry} />
        <button type="submit" disabled={act.busy}>Save trigger</button>
      </form>
      <div className="grid-flow">
        <div className="flow" aria-label="Workflow graph">
          <ReactFlow
            // Remounted when steps are added or removed so `fitView` fits them all: it only fits the first render,
            // and steps added to a new (empty) workflow landed outside the visible canvas.
            key={nodes.length}
            nodes={nodes}
            edges={edges}
            nodeTypes={nodeTypes}
            fitView
            fitViewOptions={{ maxZoom: 1 }}
            onNodeClick={(_, n) => setSelected(n.id)}
            onPaneClick={() => setSelected(null)}
            // Dragging from a step offers only the steps it may lead to (not itself, nothing that makes a loop, a free way out).
            isValidConnection={(c) => {
              const from = steps.find((s) => s.id === c.source);
              if (!from || from.type === "EXIT") return false;
              const out = transitions.filter((t) => t.fromStepId === from.id);
              const branched = from.type === "CONDITION" || from.type === "WAIT_FOR_EVENT";
              if (branched ? c.sourceHandle != null && out.some((t) => t.branch === c.sourceHandle) : out.length > 0) return false;
              return validTargets(from, steps, transitions).some((t) => t.id === c.target);
            }}
            onConnect={(c) => {
              const from = steps.find((s) => s.id === c.source);
              if (from && ["CONDITION", "WAIT_FOR_EVENT"].includes(from.type) && !c.sourceHandle) setPendingBranch(c);
              else connect(c);
            }}
            onEdgesDelete={(es) => void act.run(async () => {
              for (const e of es) await api(`/workflows/${wf.id}/transitions/${e.id}`, { method: "DELETE" });
              reload();
            })}
            onNodeDragStop={(_, n) => void api(`/workflows/${wf.id}/steps/${n.id}`, { method: "PATCH", body: { position: n.position } }).catch(() => {})}
            deleteKeyCode={null}
          >
            <Background />
            <Controls />
          </ReactFlow>
        </div>
        <aside className="steps-panel card" aria-label="Steps">
          <h2>Steps</h2>
          <div className="row">
            <Select label="Step type" value={newType} onChange={setNewType} options={STEP_TYPES.map((t) => ({ value: t, label: stepLabel(t) }))} />
            <button type="button" onClick={addStep} disabled={act.busy}>Add step</button>
          </div>
          <ul className="step-list">
            {steps.map((s) => (
              <li key={s.id}>
                <button type="button" className={`link${s.id === selected ? " current" : ""}`} aria-pressed={s.id === selected} onClick={() => setSelected(s.id)}>
                  {stepTitle(s)}{s.id === wf.entryStepId ? " (first)" : ""}
                </button>
              </li>
            ))}
          </ul>
          {steps.length === 0 && <p className="hint">Add the first step: “Send email”, then “Wait”, …</p>}
          {selectedStep && <StepEditor key={selectedStep.id} wf={wf} step={selectedStep} steps={steps} transitions={transitions} reload={reload} act={act} />}
        </aside>
      </div>
      <Modal open={!!pendingBranch} title="Which branch?" onClose={() => setPendingBranch(null)}>
        <div className="row">
          {(steps.find((s) => s.id === pendingBranch?.source)?.type === "CONDITION" ? ["yes", "no"] : ["event", "timeout"]).map((b) => (
            <button key={b} type="button" onClick={() => { const c = pendingBranch!; setPendingBranch(null); connect(c, b); }}>{branchLabel(b)}</button>
          ))}
        </div>
      </Modal>
      <Executions wf={wf} />
    </Page>
  );
}

/** Steps that may follow `step`: not itself, and none that already leads back to it (that would be a loop). */
export function validTargets(step: Step, steps: Step[], transitions: Transition[]): Step[] {
  const reaches = (from: string, to: string) => {
    const seen = new Set<string>();
    const stack = [from];
    while (stack.length) {
      const s = stack.pop()!;
      if (s === to) return true;
      if (seen.has(s)) continue;
      seen.add(s);
      for (const t of transitions) if (t.fromStepId === s) stack.push(t.toStepId);
    }
    return false;
  };
  return steps.filter((s) => s.id !== step.id && !reaches(s.id, step.id));
}

const UNITS = ["minutes", "hours", "days"] as const;
const UNIT_SECONDS: Record<string, number> = { minutes: 60, hours: 3600, days: 86400 };
/** A timeout in seconds as an amount and a unit (the largest unit it divides into). */
function splitSeconds(sec: unknown): { amount: number | ""; unit: string } {
  if (typeof sec !== "number" || sec <= 0) return { amount: "", unit: "days" };
  for (const u of ["days", "hours", "minutes"]) if (sec % UNIT_SECONDS[u]! === 0) return { amount: sec / UNIT_SECONDS[u]!, unit: u };
  return { amount: Math.round(sec / 60), unit: "minutes" };
}

/**
 * Key/value rows (webhook headers, contact fields) over an object: the rows are kept as typed (a half-typed
 * "1." or an empty new row stays on screen) and the object, without empty names, goes up on every change.
 */
function Pairs({ label, value, onChange, parse, keyLabel, valueLabel, addLabel }: { label: string; value: unknown; onChange: (o: Record<string, unknown> | undefined) => void; parse: (v: string) => unknown; keyLabel: string; valueLabel: string; addLabel: string }) {
  const [rows, setRows] = useState<[string, string][]>(() => asPairs(value));
  const sent = useRef(JSON.stringify(value ?? {}));
  const incoming = JSON.stringify(value ?? {});
  useEffect(() => {
    // Changed elsewhere (the Advanced JSON): show the new object.
    if (incoming !== sent.current) {
      sent.current = incoming;
      setRows(asPairs(value));
    }
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [incoming]);
  const update = (next: [string, string][]) => {
    setRows(next);
    const named = next.filter(([k]) => k.trim() !== "");
    const obj = named.length ? Object.fromEntries(named.map(([k, v]) => [k.trim(), parse(v)])) : undefined;
    sent.current = JSON.stringify(obj ?? {});
    onChange(obj);
  };
  return (
    <fieldset>
      <legend>{label}</legend>
      {rows.map(([k, v], i) => (
        <div className="row" key={i} role="group" aria-label={`${label} ${i + 1}`}>
          <TextInput label={keyLabel} value={k} onChange={(x) => update(rows.map((p, j) => (j === i ? [x, p[1]] : p)))} />
          <TextInput label={valueLabel} value={v} onChange={(x) => update(rows.map((p, j) => (j === i ? [p[0], x] : p)))} />
          <button type="button" className="small" onClick={() => update(rows.filter((_, j) => j !== i))} aria-label={`Remove ${keyLabel.toLowerCase()} ${k || i + 1}`}>Remove</button>
        </div>
      ))}
      <button type="button" className="small" onClick={() => update([...rows, ["", ""]])}>{addLabel}</button>
    </fieldset>
  );
}

const asPairs = (o: unknown): [string, string][] =>
  o && typeof o === "object" && !Array.isArray(o) ? Object.entries(o as Record<string, unknown>).map(([k, v]) => [k, typeof v === "string" ? v : JSON.stringify(v)]) : [];
/** A typed value: numbers, true/false and null as such, JSON objects/arrays parsed, anything else as text. */
function typed(v: string): unknown {
  const t = v.trim();
  if (t === "true") return true;
  if (t === "false") return false;
  if (t === "null") return null;
  if (t !== "" && !Number.isNaN(Number(t))) return Number(t);
  if (/^[[{]/.test(t)) {
    try {
      return JSON.parse(t);
    } catch {}
  }
  return v;
}

const bodyText = (b: unknown) => (b === undefined ? "" : typeof b === "string" ? b : JSON.stringify(b, null, 2));

/** A webhook body as typed: sent as JSON when it parses as a JSON object or array, else as text. */
function BodyField({ value, onChange }: { value: unknown; onChange: (b: unknown) => void }) {
  const [text, setText] = useState(() => bodyText(value));
  const sent = useRef(JSON.stringify(value ?? null));
  const incoming = JSON.stringify(value ?? null);
  useEffect(() => {
    if (incoming !== sent.current) {
      sent.current = incoming;
      setText(bodyText(value));
    }
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [incoming]);
  return (
    <TextArea label="Body" mono rows={4} value={text} hint="JSON or text; {{email}} and the contact's data fields are filled in." onChange={(v) => {
      setText(v);
      let b: unknown = v.trim() === "" ? undefined : v;
      if (/^\s*[[{]/.test(v)) {
        try {
          b = JSON.parse(v);
        } catch {}
      }
      sent.current = JSON.stringify(b ?? null);
      onChange(b);
    }} />
  );
}

/** The form of one step type: edits `config` (the API's step config) field by field. */
function StepConfigForm({ type, config, onChange, templates }: { type: string; config: Record<string, any>; onChange: (c: Record<string, any>) => void; templates: Template[] }) {
  const set = (patch: Record<string, unknown>) => onChange({ ...config, ...patch });
  switch (type) {
    case "SEND_EMAIL":
      return (
        <>
          <Select label="Email template" value={String(config.templateId ?? "")} onChange={(v) => set({ templateId: v })}
            options={[{ value: "", label: "Choose a template…" }, ...templates.map((t) => ({ value: t.id, label: t.name }))]} />
          {templates.length === 0 && <p className="hint">No templates yet: <Link href="/templates">create one on the Templates page</Link>.</p>}
          {(() => {
            const tpl = templates.find((t) => t.id === config.templateId);
            if (!tpl) return null;
            const v = config.trackOpens;
            return (
              <OpenTrackingField body={tpl.body} type={tpl.type} what="workflow step" inherited={tpl.trackOpens ?? null} value={typeof v === "boolean" ? v : null}
                onChange={(t) => {
                  const { trackOpens: _, ...rest } = config;
                  onChange(t === null ? rest : { ...rest, trackOpens: t });
                }} />
            );
          })()}
        </>
      );
    case "DELAY":
      return (
        <div className="row">
          <NumberInput label="Wait for" min={0} value={typeof config.amount === "number" ? config.amount : ""} onChange={(v) => set({ amount: v === "" ? undefined : v })} />
          <Select label="Unit" value={String(config.unit ?? "hours")} onChange={(v) => set({ unit: v })} options={[...UNITS]} />
        </div>
      );
    case "WAIT_FOR_EVENT": {
      const t = splitSeconds(config.timeout);
      const setTimeout_ = (amount: number | "", unit: string) => {
        const next = { ...config };
        if (amount === "" || amount <= 0) delete next.timeout;
        else next.timeout = Math.round(amount * UNIT_SECONDS[unit]!);
        onChange(next);
      };
      return (
        <>
          <TextInput label="Event name" value={String(config.eventName ?? "")} onChange={(v) => set({ eventName: v })} placeholder="purchase" />
          <div className="row">
            <NumberInput label="Give up after" min={0} value={t.amount} onChange={(v) => setTimeout_(v, t.unit)} hint="Empty: wait for as long as it takes." />
            <Select label="Timeout unit" value={t.unit} onChange={(u) => setTimeout_(t.amount, u)} options={[...UNITS]} />
          </div>
          <p className="hint">Then: the “event” branch when it arrives, the “timeout” branch when the time is up.</p>
        </>
      );
    }
    case "CONDITION": {
      const tree: Tree = "groups" in config ? (config as Tree) : config.field ? { logic: "AND", groups: [{ filters: [{ field: config.field, operator: config.operator, ...("value" in config ? { value: config.value } : {}), ...("unit" in config ? { unit: config.unit } : {}) }] }] } : emptyTree();
      return (
        <>
          <ConditionBuilder value={tree} onChange={(t) => onChange({ logic: t.logic, groups: t.groups })} label="The contact matches" />
          <p className="hint">Then: the “yes” branch when the contact matches, the “no” branch otherwise.</p>
        </>
      );
    }
    case "WEBHOOK": {
      return (
        <>
          <TextInput label="URL" type="url" value={String(config.url ?? "")} onChange={(v) => set({ url: v })} placeholder="https://example.com/hook" />
          <Select label="Method" value={String(config.method ?? "POST")} onChange={(v) => set({ method: v })} options={["POST", "GET", "PUT", "PATCH", "DELETE"]} />
          <Pairs label="Headers" keyLabel="Header" valueLabel="Header value" addLabel="Add header" value={config.headers} parse={(v) => v} onChange={(o) => {
            const next = { ...config };
            if (o) next.headers = o;
            else delete next.headers;
            onChange(next);
          }} />
          <BodyField value={config.body} onChange={(b) => {
            const next = { ...config };
            if (b === undefined) delete next.body;
            else next.body = b;
            onChange(next);
          }} />
        </>
      );
    }
    case "UPDATE_CONTACT":
      return (
        <>
          <Pairs label="Contact fields to set" keyLabel="Field" valueLabel="Value" addLabel="Add field" value={config.updates} parse={typed} onChange={(o) => set({ updates: o ?? {} })} />
          <Select label="Subscription" value={String(config.subscriptionAction ?? "none")} onChange={(v) => set({ subscriptionAction: v })}
            options={[{ value: "none", label: "Leave as it is" }, { value: "subscribe", label: "Subscribe" }, { value: "unsubscribe", label: "Unsubscribe" }]} />
        </>
      );
    case "EXIT":
      return <TextInput label="Reason (shown in the execution log)" value={String(config.reason ?? "")} onChange={(v) => set({ reason: v })} />;
    default:
      return null;
  }
}

function StepEditor({ wf, step, steps, transitions, reload, act }: { wf: Workflow; step: Step; steps: Step[]; transitions: Transition[]; reload: () => void; act: ReturnType<typeof useAction> }) {
  // The server names an unnamed step after its type ("Delay"): the field starts empty then.
  const [name, setName] = useState(customName(step) ?? "");
  const [config, setConfig] = useState<Record<string, any>>(step.config ?? {});
  // The JSON being typed under "Advanced" (null: shows the form's config).
  const [raw, setRaw] = useState<string | null>(null);
  const [advanced, setAdvanced] = useState(false);
  const [target, setTarget] = useState("");
  const [branch, setBranch] = useState("");
  const [saved, setSaved] = useState(false);
  const templates = useAsync(() => (step.type === "SEND_EMAIL" ? api<OffsetPage<Template>>("/templates", { query: { pageSize: 100 } }).then((p) => p.data) : Promise.resolve([])), [step.type]);
  const allBranches = step.type === "CONDITION" ? ["yes", "no"] : step.type === "WAIT_FOR_EVENT" ? ["event", "timeout"] : [];
  const outgoing = transitions.filter((t) => t.fromStepId === step.id);
  const freeBranches = allBranches.filter((b) => !outgoing.some((t) => t.branch === b));
  const canConnect = step.type !== "EXIT" && (allBranches.length ? freeBranches.length > 0 : outgoing.length === 0);
  const targets = validTargets(step, steps, transitions);
  let rawInvalid = false;
  if (raw !== null) {
    try {
      JSON.parse(raw);
    } catch {
      rawInvalid = true;
    }
  }
  const edit = (c: Record<string, any>) => {
    setConfig(c);
    setRaw(null);
    setSaved(false);
  };
  return (
    <form className="step-editor" aria-label="Configure step" onSubmit={(e) => { e.preventDefault(); void act.run(async () => {
      if (rawInvalid) throw new Error("The advanced configuration is not valid JSON");
      await api(`/workflows/${wf.id}/steps/${step.id}`, { method: "PATCH", body: { name, config } });
      setSaved(true);
      reload();
    }); }}>
      <h3>{stepLabel(step.type)}</h3>
      <TextInput label="Step name" value={name} placeholder={`${stepLabel(step.type)} (optional name)`} onChange={(v) => { setName(v); setSaved(false); }} />
      <StepConfigForm type={step.type} config={config} onChange={edit} templates={templates.data ?? []} />
      <Checkbox label="Advanced: edit the configuration as JSON" checked={advanced} onChange={setAdvanced} />
      {advanced && (
        <TextArea label="Configuration (JSON)" mono rows={6} invalid={rawInvalid} value={raw ?? JSON.stringify(config, null, 2)} onChange={(v) => {
          setRaw(v);
          setSaved(false);
          try {
            const parsed = JSON.parse(v);
            if (parsed && typeof parsed === "object" && !Array.isArray(parsed)) setConfig(parsed);
          } catch {}
        }} hint={rawInvalid ? "Not valid JSON yet." : undefined} />
      )}
      {saved && !act.error && <p className="ok-text" role="status">Step saved.</p>}
      <div className="row">
        <button type="submit" className="primary" disabled={act.busy}>Save step</button>
        {wf.entryStepId !== step.id && (
          <button type="button" onClick={() => void act.run(async () => {
            await api(`/workflows/${wf.id}`, { method: "PATCH", body: { entryStepId: step.id } });
            reload();
          })}>Make first step</button>
        )}
        <button type="button" className="danger" onClick={() => void act.run(async () => {
          await api(`/workflows/${wf.id}/steps/${step.id}`, { method: "DELETE", query: { splice: "true" } });
          reload();
        })}>Delete step</button>
      </div>
      {step.type !== "EXIT" && (
        <fieldset>
          <legend>Next step</legend>
          {outgoing.length === 0 && <p className="hint">Nothing follows: the workflow ends after this step.</p>}
          <ul>
            {outgoing.map((t) => {
              const to = steps.find((s) => s.id === t.toStepId);
              return (
                <li key={t.id}>
                  {t.branch ? `${branchLabel(t.branch)} → ` : "→ "}
                  {to ? stepTitle(to) : "a deleted step"}{" "}
                  <button type="button" className="small" onClick={() => void act.run(async () => {
                    await api(`/workflows/${wf.id}/transitions/${t.id}`, { method: "DELETE" });
                    reload();
                  })}>Disconnect</button>
                </li>
              );
            })}
          </ul>
          {canConnect && (targets.length === 0 ? <p className="hint">Add another step to connect this one to it.</p> : (
            <div className="row">
              <Select label="Connect to" value={target} onChange={setTarget} options={[{ value: "", label: "Choose a step…" }, ...targets.map((s) => ({ value: s.id, label: stepTitle(s) }))]} />
              {allBranches.length > 0 && <Select label="Branch" value={branch} onChange={setBranch} options={[{ value: "", label: "Choose…" }, ...freeBranches.map((b) => ({ value: b, label: branchLabel(b) }))]} />}
              <button type="button" disabled={!target || (allBranches.length > 0 && !branch)} onClick={() => void act.run(async () => {
                await api(`/workflows/${wf.id}/transitions`, { body: { fromStepId: step.id, toStepId: target, branch: branch || null } });
                setTarget("");
                setBranch("");
                reload();
              })}>Connect</button>
            </div>
          ))}
        </fieldset>
      )}
    </form>
  );
}

interface Execution {
  id: string;
  contactId: string;
  status: string;
  currentStepId: string | null;
  exitReason: string | null;
  startedAt: string;
  completedAt: string | null;
  steps?: { stepId: string; type: string; status: string; startedAt: string; completedAt: string | null; output: unknown; error: string | null }[];
}

function Executions({ wf }: { wf: Workflow }) {
  const [status, setStatus] = useState("");
  const list = useAsync(() => api<OffsetPage<Execution>>(`/workflows/${wf.id}/executions`, { query: { status, pageSize: 50 } }), [wf.id, status]);
  const [open, setOpen] = useState<string | null>(null);
  const detail = useAsync(() => (open ? api<Execution>(`/workflows/${wf.id}/executions/${open}`) : Promise.resolve(null)), [open]);
  const act = useAction();
  const [startEmail, setStartEmail] = useState("");
  const [started, setStarted] = useState("");
  usePoll(list.reload, 2000, wf.enabled);
  // The executions carry a contact id only (time-ordered ids all start alike): show each contact's email.
  const emails = useContactEmails((list.data?.data ?? []).map((x) => x.contactId));
  return (
    <section className="card" aria-labelledby="exec-h">
      <div className="row spread">
        <h2 id="exec-h">Executions</h2>
        <div className="row">
          <Select label="Execution status" value={status} onChange={setStatus} options={["", "RUNNING", "WAITING", "COMPLETED", "EXITED", "FAILED", "CANCELLED"].map((s) => ({ value: s, label: s || "Any" }))} />
          <button type="button" onClick={() => list.reload()}>Refresh</button>
          <button type="button" className="danger" onClick={() => void act.run(async () => {
            if (!confirm("Cancel every running or waiting execution?")) return;
            await api(`/workflows/${wf.id}/executions/cancel-all`, { method: "POST" });
            list.reload();
          })}>Cancel all</button>
        </div>
      </div>
      <ErrorBanner error={list.error ?? act.error} />
      {started && <Notice kind="ok">{started}</Notice>}
      <form className="row" aria-label="Start an execution" onSubmit={(e) => { e.preventDefault(); void act.run(async () => {
        setStarted("");
        await api(`/workflows/${wf.id}/executions`, { body: { email: startEmail.trim() } });
        setStarted(`Execution started for ${startEmail.trim()}.`);
        setStartEmail("");
        list.reload();
      }); }}>
        <TextInput label="Start for a contact (email)" type="email" value={startEmail} onChange={setStartEmail} required />
        <button type="submit" disabled={act.busy || !startEmail.trim()}>Start execution</button>
      </form>
      {(list.data?.data ?? []).length === 0 ? <Empty>No executions yet.</Empty> : (
        <Table head={["Contact", "Status", "Started", "Finished", <><span className="sr-only">Log</span></>]}>
            {list.data?.data.map((x) => (
              <tr key={x.id}>
                <td><Link href={`/contacts/${x.contactId}`} title={x.contactId}>{emails.get(x.contactId) ?? `…${x.contactId.slice(-12)}`}</Link></td>
                <td><Badge>{x.status}</Badge>{x.exitReason && <div className="hint">{x.exitReason}</div>}</td>
                <td>{fmtDate(x.startedAt)}</td>
                <td>{fmtDate(x.completedAt)}</td>
                <td><button type="button" className="small" onClick={() => setOpen(open === x.id ? null : x.id)} aria-expanded={open === x.id}>Step log</button></td>
              </tr>
            ))}
          </Table>
      )}
      {open && detail.data && (
        <div className="card" aria-label="Step log">
          <h3>Execution {detail.data.id.slice(0, 8)}… <Badge>{detail.data.status}</Badge></h3>
          <ol className="timeline">
            {(detail.data.steps ?? []).map((s, i) => (
              <li key={i}>
                <time>{fmtDate(s.startedAt)}</time>
                <strong>{stepLabel(s.type)}</strong> <Badge>{s.status}</Badge>
                {s.error && <span className="hint">{s.error}</span>}
                {s.output != null && (typeof s.output === "object" ? <Details data={s.output as Record<string, unknown>} /> : <span className="hint">{String(s.output)}</span>)}
              </li>
            ))}
          </ol>
        </div>
      )}
    </section>
  );
}

/** Emails of the given contact ids, fetched once per id (a deleted contact keeps showing its id). */
function useContactEmails(ids: string[]): Map<string, string> {
  const [known, setKnown] = useState<Map<string, string>>(() => new Map());
  const asked = useRef(new Set<string>());
  const key = [...new Set(ids)].sort().join(",");
  useEffect(() => {
    const missing = [...new Set(ids)].filter((id) => !asked.current.has(id));
    if (!missing.length) return;
    for (const id of missing) asked.current.add(id);
    let live = true;
    void Promise.all(missing.map((id) => api<{ id: string; email: string }>(`/contacts/${id}`).then((c) => [id, c.email] as const, () => null))).then((found) => {
      if (!live) return;
      setKnown((prev) => {
        const next = new Map(prev);
        for (const f of found) if (f) next.set(f[0], f[1]);
        return next;
      });
    });
    return () => {
      live = false;
      for (const id of missing) asked.current.delete(id);
    };
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [key]);
  return known;
}
