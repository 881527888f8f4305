import { Background, Controls, Handle, Position, ReactFlow, type Connection, type Edge, type Node, type NodeProps } from "@xyflow/react";
import { useEffect, useMemo, useRef, useState } from "react";
import { Link, useLocation } from "wouter";
import { api, fmtDate, type OffsetPage } from "../api";
import { Badge, Checkbox, Empty, ErrorBanner, Loading, Modal, Notice, Page, Select, TextInput, useAction, useAsync, usePoll } from "../ui";
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
        <table>
          <thead><tr><th scope="col">Name</th><th scope="col">Trigger</th><th scope="col">Enabled</th><th scope="col">Updated</th></tr></thead>
          <tbody>
            {list.data?.data.map((w) => (
              <tr key={w.id}>
                <td><Link href={`/workflows/${w.id}`}>{w.name}</Link></td>
                <td>{w.triggerType}{w.triggerConfig?.eventName ? `: ${w.triggerConfig.eventName}` : ""}</td>
                <td>{w.enabled ? <Badge tone="ok">enabled</Badge> : <Badge tone="muted">disabled</Badge>}</td>
                <td>{fmtDate(w.updatedAt)}</td>
              </tr>
            ))}
          </tbody>
        </table>
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
  const d = data as { step: Step; entry: boolean };
  const branches = d.step.type === "CONDITION" ? ["yes", "no"] : d.step.type === "WAIT_FOR_EVENT" ? ["event", "timeout"] : null;
  return (
    <div className={`flow-node${d.entry ? " entry" : ""}`} aria-label={`Step ${d.step.name || d.step.type}`}>
      <Handle type="target" position={Position.Top} />
      <div className="flow-type">{d.step.type}{d.entry ? " · entry" : ""}</div>
      <div className="flow-name">{d.step.name || summary(d.step)}</div>
      {d.step.type !== "EXIT" &&
        (branches ? (
          branches.map((b, i) => <Handle key={b} id={b} type="source" position={Position.Bottom} style={{ left: `${30 + i * 40}%` }} title={b} />)
        ) : (
          <Handle type="source" position={Position.Bottom} />
        ))}
    </div>
  );
}
const nodeTypes = { step: StepNode };

function summary(s: Step): string {
  const c = s.config ?? {};
  switch (s.type) {
    case "DELAY": return `wait ${c.amount} ${c.unit}`;
    case "WAIT_FOR_EVENT": return `until ${c.eventName}`;
    case "WEBHOOK": return String(c.url ?? "");
    case "CONDITION": return c.field ? `${c.field} ${c.operator} ${JSON.stringify(c.value)}` : "condition";
    default: return s.type.toLowerCase().replace("_", " ");
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
        position: s.position && typeof s.position.x === "number" ? { x: s.position.x, y: s.position.y } : { x: 80 + (i % 3) * 220, y: 40 + Math.floor(i / 3) * 140 + (i % 3) * 30 },
        data: { step: s, entry: s.id === wf.entryStepId },
        selected: s.id === selected,
      })),
    [steps, wf.entryStepId, selected],
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
      const s = await api<Step>(`/workflows/${wf.id}/steps`, { body: { type: newType, config, position: { x: 80 + (n % 3) * 220, y: 40 + Math.floor(n / 3) * 140 } } });
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
          <button type="button" className="danger" onClick={() => {
            if (!confirm(`Delete workflow ${wf.name}?`)) return;
            void act.run(async () => {
              await api(`/workflows/${wf.id}`, { method: "DELETE" });
              navigate("/workflows");
            });
          }}>Delete</button>
        </>
      }
    >
      <ErrorBanner error={act.error} />
      {note && <Notice kind="ok">{note}</Notice>}
      <p>
        Status: {wf.enabled ? <Badge tone="ok">enabled</Badge> : <Badge tone="muted">disabled</Badge>} · trigger{" "}
        <span>{wf.triggerType}{wf.triggerType === "EVENT" && wf.triggerConfig?.eventName ? `: ${wf.triggerConfig.eventName}` : ""}</span>
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
            <Select label="Step type" value={newType} onChange={setNewType} options={[...STEP_TYPES]} />
            <button type="button" onClick={addStep} disabled={act.busy}>Add step</button>
          </div>
          <ul className="step-list">
            {steps.map((s) => (
              <li key={s.id}>
                <button type="button" className={`link${s.id === selected ? " current" : ""}`} aria-pressed={s.id === selected} onClick={() => setSelected(s.id)}>
                  {s.type}{s.name ? ` · ${s.name}` : ""}{s.id === wf.entryStepId ? " (entry)" : ""}
                </button>
              </li>
            ))}
          </ul>
          {selectedStep && <StepEditor key={selectedStep.id} wf={wf} step={selectedStep} steps={steps} transitions={transitions} reload={reload} />}
        </aside>
      </div>
      <Modal open={!!pendingBranch} title="Which branch?" onClose={() => setPendingBranch(null)}>
        <div className="row">
          {(steps.find((s) => s.id === pendingBranch?.source)?.type === "CONDITION" ? ["yes", "no"] : ["event", "timeout"]).map((b) => (
            <button key={b} type="button" onClick={() => { const c = pendingBranch!; setPendingBranch(null); connect(c, b); }}>{b}</button>
          ))}
        </div>
      </Modal>
      <Executions wf={wf} />
    </Page>
  );
}

function StepEditor({ wf, step, steps, transitions, reload }: { wf: Workflow; step: Step; steps: Step[]; transitions: Transition[]; reload: () => void }) {
  const [name, setName] = useState(step.name ?? "");
  const [config, setConfig] = useState(JSON.stringify(step.config ?? {}, null, 2));
  const [target, setTarget] = useState("");
  const [branch, setBranch] = useState("");
  const act = useAction();
  const templates = useAsync(() => (step.type === "SEND_EMAIL" ? api<OffsetPage<Template>>("/templates", { query: { pageSize: 100 } }).then((p) => p.data) : Promise.resolve([])), [step.type]);
  const branches = step.type === "CONDITION" ? ["yes", "no"] : step.type === "WAIT_FOR_EVENT" ? ["event", "timeout"] : [];
  const outgoing = transitions.filter((t) => t.fromStepId === step.id);
  let parsed: Record<string, unknown> | null = null;
  try {
    parsed = JSON.parse(config);
  } catch {}
  return (
    <form className="step-editor" aria-label="Configure step" onSubmit={(e) => { e.preventDefault(); void act.run(async () => {
      if (!parsed) throw new Error("The configuration is not valid JSON");
      await api(`/workflows/${wf.id}/steps/${step.id}`, { method: "PATCH", body: { name: name || undefined, config: parsed } });
      reload();
    }); }}>
      <h3>{step.type}</h3>
      <ErrorBanner error={act.error} />
      <TextInput label="Step name" value={name} onChange={setName} />
      {step.type === "SEND_EMAIL" && (
        <Select label="Email template" value={String(parsed?.templateId ?? "")} onChange={(v) => setConfig(JSON.stringify({ ...(parsed ?? {}), templateId: v }, null, 2))}
          options={[{ value: "", label: "Choose…" }, ...(templates.data ?? []).map((t) => ({ value: t.id, label: t.name }))]} />
      )}
      {step.type === "SEND_EMAIL" && (() => {
        const tpl = templates.data?.find((t) => t.id === parsed?.templateId);
        if (!tpl) return null;
        const v = parsed?.trackOpens;
        return (
          <OpenTrackingField body={tpl.body} type={tpl.type} what="workflow step" inherited={tpl.trackOpens ?? null} value={typeof v === "boolean" ? v : null}
            onChange={(t) => {
              const { trackOpens: _, ...rest } = parsed ?? {};
              setConfig(JSON.stringify(t === null ? rest : { ...rest, trackOpens: t }, null, 2));
            }} />
        );
      })()}
      <div className="field">
        <label htmlFor="step-config">Configuration (JSON)</label>
        <textarea id="step-config" className="mono" rows={6} value={config} onChange={(e) => setConfig(e.target.value)} aria-invalid={!parsed} />
      </div>
      <div className="row">
        <button type="submit" className="primary" disabled={act.busy}>Save step</button>
        {wf.entryStepId !== step.id && (
          <button type="button" onClick={() => void act.run(async () => {
            await api(`/workflows/${wf.id}`, { method: "PATCH", body: { entryStepId: step.id } });
            reload();
          })}>Make entry step</button>
        )}
        <button type="button" className="danger" onClick={() => void act.run(async () => {
          await api(`/workflows/${wf.id}/steps/${step.id}`, { method: "DELETE", query: { splice: "true" } });
          reload();
        })}>Delete step</button>
      </div>
      {step.type !== "EXIT" && (
        <fieldset>
          <legend>Next step</legend>
          <ul>
            {outgoing.map((t) => (
              <li key={t.id}>
                {t.branch ? `${t.branch} → ` : "→ "}
                {steps.find((s) => s.id === t.toStepId)?.type ?? t.toStepId}{" "}
                <button type="button" className="small" onClick={() => void act.run(async () => {
                  await api(`/workflows/${wf.id}/transitions/${t.id}`, { method: "DELETE" });
                  reload();
                })}>Disconnect</button>
              </li>
            ))}
          </ul>
          <div className="row">
            <Select label="Connect to" value={target} onChange={setTarget} options={[{ value: "", label: "Choose a step…" }, ...steps.filter((s) => s.id !== step.id).map((s) => ({ value: s.id, label: `${s.type}${s.name ? ` · ${s.name}` : ""}` }))]} />
            {branches.length > 0 && <Select label="Branch" value={branch} onChange={setBranch} options={[{ value: "", label: "Choose…" }, ...branches]} />}
            <button type="button" disabled={!target || (branches.length > 0 && !branch)} onClick={() => void act.run(async () => {
              await api(`/workflows/${wf.id}/transitions`, { body: { fromStepId: step.id, toStepId: target, branch: branch || null } });
              setTarget("");
              reload();
            })}>Connect</button>
          </div>
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
        <table>
          <thead><tr><th scope="col">Contact</th><th scope="col">Status</th><th scope="col">Started</th><th scope="col">Finished</th><th scope="col"><span className="sr-only">Log</span></th></tr></thead>
          <tbody>
            {list.data?.data.map((x) => (
              <tr key={x.id}>
                <td><Link href={`/contacts/${x.contactId}`} title={x.contactId}>{emails.get(x.contactId) ?? `…${x.contactId.slice(-12)}`}</Link></td>
                <td><Badge>{x.status}</Badge>{x.exitReason && <div className="hint">{x.exitReason}</div>}</td>
                <td>{fmtDate(x.startedAt)}</td>
                <td>{fmtDate(x.completedAt)}</td>
                <td><button type="button" className="small" onClick={() => setOpen(open === x.id ? null : x.id)} aria-expanded={open === x.id}>Step log</button></td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {open && detail.data && (
        <div className="card" aria-label="Step log">
          <h3>Execution {detail.data.id.slice(0, 8)}… <Badge>{detail.data.status}</Badge></h3>
          <ol className="timeline">
            {(detail.data.steps ?? []).map((s, i) => (
              <li key={i}>
                <time>{fmtDate(s.startedAt)}</time>
                <strong>{s.type}</strong> <Badge>{s.status}</Badge>
                {s.error && <span className="hint">{s.error}</span>}
                {s.output != null && <code className="small-code wrap">{JSON.stringify(s.output)}</code>}
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
