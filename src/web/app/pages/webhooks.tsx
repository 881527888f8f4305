import { useState } from "react";
import { api, fmtDate, listOf } from "../api";
import { Badge, Checkbox, CopyButton, Empty, ErrorBanner, Loading, Notice, Page, TextInput, useAction, useAsync } from "../ui";

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
              <button type="button" onClick={() => void act.run(async () => { await api(`/webhook-endpoints/${ep.id}/test`, { method: "POST" }); setNote(`Test event sent to ${ep.url}.`); })}>Send test</button>
              <button type="button" onClick={() => void act.run(async () => { await api(`/webhook-endpoints/${ep.id}`, { method: "PATCH", body: { enabled: !ep.enabled } }); list.reload(); })}>{ep.enabled ? "Disable" : "Enable"}</button>
              <button type="button" className="danger" onClick={() => { if (confirm(`Delete endpoint ${ep.url}?`)) void act.run(async () => { await api(`/webhook-endpoints/${ep.id}`, { method: "DELETE" }); list.reload(); }); }}>Delete</button>
            </div>
          </div>
          <p className="hint">Events: {ep.events.join(", ")} · signing secret <CopyButton text={ep.secret} label="Copy secret" /></p>
          <Deliveries id={ep.id} />
        </section>
      ))}
    </Page>
  );
}

function Deliveries({ id }: { id: string }) {
  const list = useAsync(() => api<any>(`/webhook-endpoints/${id}/deliveries`, { query: { limit: 10 } }).then(listOf<any>), [id]);
  if (!list.data?.length) return null;
  return (
    <details>
      <summary>Recent deliveries</summary>
      <table>
        <thead><tr><th scope="col">Event</th><th scope="col">Status</th><th scope="col">Attempts</th><th scope="col">Response</th><th scope="col">Created</th></tr></thead>
        <tbody>{list.data.map((d) => <tr key={d.id}><td>{d.event}</td><td><Badge>{d.status}</Badge></td><td>{d.attempts}</td><td>{d.responseStatus ?? "—"}</td><td>{fmtDate(d.createdAt)}</td></tr>)}</tbody>
      </table>
    </details>
  );
}
