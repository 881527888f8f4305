import { useState, type ReactNode } from "react";
import { Link } from "wouter";
import { api, fmtDate, listOf, type CursorPage } from "../api";
import { Badge, Empty, ErrorBanner, Loading, Page, Pager, Select, Table, TextInput, useAsync, useCursorPages } from "../ui";

interface Item {
  id: string;
  type: string;
  timestamp: string;
  contactId?: string;
  contactEmail?: string;
  metadata?: Record<string, unknown>;
}

interface Upcoming {
  id?: string;
  type: string;
  at: string | null;
  details?: Record<string, unknown>;
}

const TYPE_LABELS: Record<string, string> = {
  event: "Event",
  "email.sent": "Email sent",
  "email.delivery": "Email delivered",
  "email.delivered": "Email delivered",
  "email.deferred": "Delivery deferred",
  "email.failed": "Delivery failed",
  "email.bounce": "Bounced",
  "email.complaint": "Marked as spam",
  "email.open": "Opened",
  "email.click": "Clicked a link",
  "email.suppressed": "Suppressed",
  "email.received": "Email received",
  "email.pending": "Email waiting to be sent",
  "email.retry": "Email retry",
  "contact.created": "Contact created",
  "contact.subscribed": "Subscribed",
  "contact.unsubscribed": "Unsubscribed",
  "campaign.scheduled": "Campaign scheduled",
  "workflow.execution": "Workflow step waiting",
};

/** A type in words: "email.open" -> "Opened", an unknown "segment.vip.entry" -> "Segment vip entry". */
export function typeLabel(type: string): string {
  if (TYPE_LABELS[type]) return TYPE_LABELS[type]!;
  if (type.startsWith("job.")) return `Background job: ${type.slice(4).replace(/[._-]/g, " ")}`;
  const words = type.replace(/[._-]+/g, " ").trim();
  return words.charAt(0).toUpperCase() + words.slice(1);
}

const KEY_LABELS: Record<string, string> = {
  subject: "Subject",
  to: "To",
  from: "From",
  url: "Link",
  reason: "Reason",
  bounceType: "Bounce type",
  lastReply: "Server reply",
  attempts: "Attempts",
  state: "State",
  progress: "Progress",
  status: "Status",
  waitingFor: "Waiting for the event",
  workflowName: "Workflow",
  name: "Name",
  userAgent: "Browser",
  mxHost: "Receiving server",
  reply: "Server reply",
  sourceType: "Sent by",
  ip: "IP address",
  eventName: "Event",
  error: "Error",
};
const SOURCE_WORDS: Record<string, string> = { CAMPAIGN: "a campaign", TRANSACTIONAL: "the API", WORKFLOW: "a workflow", SYSTEM: "the server" };
// Ids are shown as links (campaign, workflow, contact) or left out: a person reads names, not ids.
const HIDDEN = new Set(["emailId", "stepId", "contactId", "messageId", "templateId", "workflowId", "campaignId", "endpointId", "jobId", "executionId"]);

function valueText(v: unknown): string {
  if (v === null || v === undefined || v === "") return "—";
  if (typeof v === "boolean") return v ? "yes" : "no";
  if (typeof v === "object") {
    if (Array.isArray(v)) return v.map(valueText).join(", ");
    return Object.entries(v as Record<string, unknown>).map(([k, x]) => `${k}: ${valueText(x)}`).join(", ");
  }
  return String(v);
}

/** Readable details of an activity or upcoming item: labelled values and links, no JSON. */
export function Details({ data }: { data: Record<string, unknown> | undefined }) {
  if (!data) return null;
  const parts: ReactNode[] = [];
  const d = { ...data };
  if (d.name && d.data !== undefined && typeof d.data === "object") {
    // A tracked event: its name, then its properties.
    parts.push(<strong key="name">{String(d.name)}</strong>);
    const props = d.data as Record<string, unknown>;
    for (const [k, v] of Object.entries(props)) parts.push(<span key={`p.${k}`}>{k}: {valueText(v)}</span>);
    delete d.name;
    delete d.data;
  }
  for (const [k, v] of Object.entries(d)) {
    if (HIDDEN.has(k) || v === null || v === undefined || v === "") continue;
    if (k === "progress" && typeof v === "number") {
      parts.push(<span key={k}>Progress: {Math.round(v)}%</span>);
      continue;
    }
    parts.push(
      <span key={k}>
        {KEY_LABELS[k] ?? k}: {k === "sourceType" ? SOURCE_WORDS[String(v)] ?? valueText(v) : valueText(v)}
      </span>,
    );
  }
  if (typeof data.campaignId === "string") parts.push(<Link key="campaign" href={`/campaigns/${data.campaignId}`}>Open the campaign</Link>);
  if (typeof data.workflowId === "string") parts.push(<Link key="workflow" href={`/workflows/${data.workflowId}`}>Open the workflow</Link>);
  if (typeof data.contactId === "string") parts.push(<Link key="contact" href={`/contacts/${data.contactId}`}>Open the contact</Link>);
  if (!parts.length) return null;
  return <span className="details">{parts.map((p, i) => <span key={i} className="detail">{p}</span>)}</span>;
}

export function ActivityPage() {
  const types = useAsync(() => api<string[]>("/activity/types").then(listOf<string>), []);
  const [type, setType] = useState("");
  const [name, setName] = useState("");
  const [nameQuery, setNameQuery] = useState("");
  const pages = useCursorPages();
  const feed = useAsync(() => api<CursorPage<Item>>("/activity", { query: { type, name: nameQuery, cursor: pages.cursor, limit: 50 } }), [type, nameQuery, pages.cursor]);
  const upcoming = useAsync(() => api<Upcoming[]>("/activity/upcoming", { query: { limit: 10 } }).then(listOf<Upcoming>), []);
  return (
    <Page title="Activity">
      <form className="row filters" role="search" onSubmit={(e) => { e.preventDefault(); setNameQuery(name); pages.reset(); }}>
        <Select label="Type" value={type} onChange={(v) => { setType(v); pages.reset(); }} options={[{ value: "", label: "All types" }, ...(types.data ?? []).map((t) => ({ value: t, label: typeLabel(t) }))]} />
        <TextInput label="Event name" value={name} onChange={setName} />
        <button type="submit">Filter</button>
        <button type="button" onClick={() => feed.reload()}>Refresh</button>
      </form>
      <ErrorBanner error={feed.error} />
      {feed.loading && !feed.data ? <Loading /> : feed.data?.data.length === 0 ? <Empty>No activity yet: sent emails, opens, clicks and tracked events show up here.</Empty> : (
        <Table head={["When", "What", "Contact", "Details"]} label="Activity feed" className="stack">
          {feed.data?.data.map((a) => (
            <tr key={a.id}>
              <td className="nowrap" data-label="When">{fmtDate(a.timestamp)}</td>
              <td data-label="What"><Badge tone="neutral">{typeLabel(a.type)}</Badge></td>
              <td data-label="Contact">{a.contactId ? <Link href={`/contacts/${a.contactId}`}>{a.contactEmail ?? "a contact"}</Link> : "—"}</td>
              <td data-label="Details"><Details data={a.metadata} /></td>
            </tr>
          ))}
        </Table>
      )}
      <Pager info={`Page ${pages.page}`} hasPrev={pages.page > 1} hasNext={!!feed.data?.hasMore} onPrev={pages.prev} onNext={() => pages.next(feed.data?.cursor)} />
      <section className="card" aria-labelledby="upcoming-h">
        <h2 id="upcoming-h">Upcoming</h2>
        <ErrorBanner error={upcoming.error} />
        {upcoming.data?.length === 0 && <Empty>Nothing scheduled.</Empty>}
        <ul className="upcoming">
          {upcoming.data?.map((u, i) => (
            <li key={u.id ?? i}>
              <span className="nowrap">{u.at ? fmtDate(u.at) : "When the event arrives"}</span> · <strong>{typeLabel(u.type)}</strong> <Details data={u.details} />
            </li>
          ))}
        </ul>
      </section>
    </Page>
  );
}
