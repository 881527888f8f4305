import { useState } from "react";
import { api, fmtDate, listOf } from "../api";
import { Badge, Checkbox, CopyButton, Empty, ErrorBanner, Loading, Notice, Page, TextInput, useAction, useAsync, Table } from "../ui";

interface Endpoint {
  id: string;
  url: string;
  events: string[];
  description: string | null;
  secret: string;
  enabled: boolean;
  createdAt: string;
}

const EVENTS = ["email.sent", "email.delivery", "email.deferred", "email.failed", "email.bounce", "email.complaint", "email.open", "email.click", "email.suppressed", "email.received", "contact.subscribed", "contact.unsubscribed", "contact.confirmed", "suppression.created", "suppression.deleted"];

export function WebhooksPage() {
  const list = useAsync(() => api<any>("/webhook-endpoints").then(listOf<Endpoint>), []);
  const [url, setUrl] = useState("");
  const [events, setEvents] = useState<string[]>(["email.delivery", "email.bounce"]);
  const [note, setNote] = useState("");
  // The outcome of the last "Send test" of each endpoint.
  const [tests, setTests] = useState<Record<string, TestResult | "pending" | undefined>>({});
  const act = useAction();
  return (
    <Page title="Webhooks">
      <p className="hint">Email lifecycle, subscription, segment and suppression-list events are POSTed to your endpoints, signed per the Standard Webhooks spec with the endpoint's secret.</p>
      <form className="card" onSubmit={(e) => { e.preventDefault(); void act.run(async () => {
        await api("/webhook-endpoints", { body: { url, events } });
        setUrl("");
        list.reload();
      }); }}>
        <TextInput label="Endpoint URL" type="url" value={url} onChange={setUrl} required placeholder="https://example.com/webhooks/mail" />
        <fieldset>
          <legend>Events</legend>
          <div className="row">
            {EVENTS.map((ev) => <Checkbox key={ev} label={ev} checked={events.includes(ev)} onChange={(on) => setEvents(on ? [...events, ev] : events.filter((x) => x !== ev))} />)}
          </div>
        </fieldset>
        <button type="submit" className="primary" disabled={act.busy}>Add endpoint</button>
      </form>
      <ErrorBanner error={list.error ?? act.error} />
      {note && <Notice kind="ok">{note}</Notice>}
      {list.loading && !list.data ? <Loading /> : list.data?.length === 0 ? <Empty>No webhook endpoints.</Empty> : list.data?.map((ep) => (
        <section className="card" key={ep.id} aria-label={`Endpoint ${ep.url}`}>
          <div className="row spread">
            <h2><code>{ep.url}</code> {ep.enabled ? <Badge tone="ok">enabled</Badge> : <Badge tone="muted">disabled</Badge>}</h2>
            <div className="row">
              <button type="button" disabled={act.busy} onClick={() => void act.run(async () => {
                setNote("");
                setTests((t) => ({ ...t, [ep.id]: "pending" }));
                try {
                  const r = await api<TestResult>(`/webhook-endpoints/${ep.id}/test`, { method: "POST" });
                  setTests((t) => ({ ...t, [ep.id]: r }));
                } catch (e) {
                  setTests((t) => ({ ...t, [ep.id]: undefined }));
                  throw e;
                }
              })}>Send test</button>
              <button type="button" onClick={() => void act.run(async () => { await api(`/webhook-endpoints/${ep.id}`, { method: "PATCH", body: { enabled: !ep.enabled } }); list.reload(); })}>{ep.enabled ? "Disable" : "Enable"}</button>
              <button type="button" className="danger" onClick={() => { if (confirm(`Delete endpoint ${ep.url}?`)) void act.run(async () => { await api(`/webhook-endpoints/${ep.id}`, { method: "DELETE" }); list.reload(); }); }}>Delete</button>
            </div>
          </div>
          <p className="hint">Events: {ep.events.join(", ")} · signing secret <CopyButton text={ep.secret} label="Copy secret" /></p>
          <TestOutcome result={tests[ep.id]} />
          <Deliveries id={ep.id} version={tests[ep.id] && tests[ep.id] !== "pending" ? (tests[ep.id] as TestResult).delivery.id : ""} />
        </section>
      ))}
    </Page>
  );
}

interface TestResult {
  success: boolean;
  delivery: { id: string; status: string; responseStatus: number | null; error: string | null; responseBody: string | null; attempts: number };
}

/** What the endpoint really did with the test event: its status code, or why it could not be reached. */
function TestOutcome({ result }: { result: TestResult | "pending" | undefined }) {
  if (!result) return null;
  if (result === "pending") return <p className="muted" role="status" aria-label="Test result">Sending the test event…</p>;
  const d = result.delivery;
  const code = d.responseStatus;
  const body = d.responseBody?.trim();
  return (
    <div className={`banner ${result.success ? "ok" : "error"}`} role="status" aria-label="Test result">
      {result.success ? (
        <strong>Test delivered: your endpoint answered {code}.</strong>
      ) : code ? (
        <strong>Test failed: your endpoint answered {code}{code >= 500 ? " (a server error on its side)" : code >= 400 ? " (it refused the request)" : ""}.</strong>
      ) : (
        <strong>Test failed: the endpoint could not be reached{d.error ? ` (${d.error})` : ""}.</strong>
      )}
      {code !== null && d.error && !/^HTTP \d+$/.test(d.error) && <div>{d.error}</div>}
      {body && <div className="hint">Its answer: <code className="small-code">{body.length > 300 ? body.slice(0, 300) + "…" : body}</code></div>}
      {!result.success && <div className="hint">Events are retried with backoff; a test event is sent once.</div>}
    </div>
  );
}

function Deliveries({ id, version }: { id: string; version: string }) {
  const list = useAsync(() => api<any>(`/webhook-endpoints/${id}/deliveries`, { query: { limit: 10 } }).then(listOf<any>), [id, version]);
  if (!list.data?.length) return null;
  return (
    <details>
      <summary>Recent deliveries</summary>
      <Table head={["Event", "Status", "Attempts", "Response", "Created"]}>{list.data.map((d) => <tr key={d.id}><td>{d.event}</td><td><Badge>{d.status}</Badge></td><td>{d.attempts}</td><td>{d.responseStatus ?? "—"}</td><td>{fmtDate(d.createdAt)}</td></tr>)}</Table>
    </details>
  );
}
