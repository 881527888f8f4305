import { CsvImportButton } from "../components/csv-import";
import { useState } from "react";
import { Link, useLocation } from "wouter";
import { api, fmtDate, pollJob, type CursorPage } from "../api";
import { Details } from "./activity";
import { Badge, Checkbox, Empty, ErrorBanner, Loading, Modal, Notice, Page, Pager, Progress, Select, Table, TextArea, TextInput, useAction, useAsync } from "../ui";

export interface Contact {
  id: string;
  email: string;
  subscribed: boolean;
  pendingConfirmation?: boolean;
  data: Record<string, unknown>;
  createdAt: string;
  updatedAt: string;
}

interface Job {
  id: string;
  /** `import`, `bulk-subscribe`, `bulk-unsubscribe` or `bulk-delete` (GET /contacts/{import,bulk}/:jobId). */
  type?: string;
  state: string;
  progress: number;
  error?: string | null;
  result?: { total?: number; succeeded?: number; created?: number; updated?: number; failed?: number; errors?: { row?: number; email?: string | null; contactId?: string; error: string }[] } | null;
}

const plural = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;

/** The finished job in its own terms: an import creates and updates rows, a bulk job deletes or (un)subscribes contacts. */
export function jobSummary(job: Job): string {
  const r = job.result ?? {};
  const total = r.total ?? 0;
  const ok = r.succeeded ?? 0;
  const failed = `${r.failed ?? 0} failed`;
  switch (job.type) {
    case "bulk-delete":
      return `${ok} of ${plural(total, "contact")} deleted, ${failed}`;
    case "bulk-subscribe":
    case "bulk-unsubscribe": {
      const verb = job.type === "bulk-subscribe" ? "subscribed" : "unsubscribed";
      // `updated` counts the contacts whose subscription flipped; the others already were.
      const already = ok - (r.updated ?? ok);
      return `${ok} of ${plural(total, "contact")} ${verb}${already > 0 ? ` (${already} already ${verb})` : ""}, ${failed}`;
    }
    default:
      return `${ok} of ${total} succeeded, ${r.created ?? 0} created, ${r.updated ?? 0} updated${r.failed ? `, ${failed}` : ""}`;
  }
}

function JobStatus({ job, label }: { job: Job | null; label: string }) {
  if (!job) return null;
  const r = job.result;
  const bulk = job.type?.startsWith("bulk-") ?? false;
  return (
    <div className="job" aria-live="polite">
      <Progress value={job.progress ?? 0} label={label} />
      <div>
        {label}: <Badge>{job.state}</Badge>
        {r && job.state === "completed" && <span> {jobSummary(job)}</span>}
        {job.state === "failed" && job.error && <span> {job.error}</span>}
      </div>
      {r?.errors && r.errors.length > 0 && (
        <details>
          <summary>{plural(r.errors.length, bulk ? "error" : "row error")}</summary>
          <ul>
            {r.errors.slice(0, 50).map((e, i) => (
              <li key={i}>
                {bulk ? (e.contactId ? `Contact ${e.contactId}: ` : "") : e.row !== undefined && `Row ${e.row}: `}
                {e.email && `${e.email}: `}
                {e.error}
              </li>
            ))}
          </ul>
        </details>
      )}
    </div>
  );
}

const PAGE_SIZE = 25;

export function ContactsPage() {
  const [search, setSearch] = useState("");
  const [query, setQuery] = useState("");
  const [subscribed, setSubscribed] = useState<"" | "true" | "false">("");
  const [sort, setSort] = useState<"createdAt" | "email">("createdAt");
  const [dir, setDir] = useState<"desc" | "asc">("desc");
  const [cursors, setCursors] = useState<(string | null)[]>([null]);
  const cursor = cursors[cursors.length - 1];
  const [total, setTotal] = useState(0);
  const page = useAsync(async () => {
    const p = await api<CursorPage<Contact>>("/contacts", { query: { search: query, subscribed, sort, dir, limit: PAGE_SIZE, cursor } });
    // The cursor list counts (`total`) on its first page only: kept for the pages after it.
    if (!cursor) setTotal(p.total);
    return p;
  }, [query, subscribed, sort, dir, cursor]);
  const [selected, setSelected] = useState<Set<string>>(new Set());
  const [creating, setCreating] = useState(false);
  const [job, setJob] = useState<Job | null>(null);
  const [jobLabel, setJobLabel] = useState("");
  const act = useAction();

  const resetPaging = () => {
    setCursors([null]);
    setSelected(new Set());
  };
  const rows = page.data?.data ?? [];
  // Position in the list: the page index is the number of cursors followed from the first page.
  const first = (cursors.length - 1) * PAGE_SIZE + 1;
  const last = first + rows.length - 1;
  const pages = Math.max(1, Math.ceil(total / PAGE_SIZE));
  const allSelected = rows.length > 0 && rows.every((r) => selected.has(r.id));

  const bulk = (action: "bulk-subscribe" | "bulk-unsubscribe" | "bulk-delete", label: string) =>
    void act.run(async () => {
      if (action === "bulk-delete" && !confirm(`Delete ${selected.size} contacts permanently?`)) return;
      const { jobId } = await api<{ jobId: string }>(`/contacts/${action}`, { body: { contactIds: [...selected] } });
      setJobLabel(label);
      await pollJob(`/contacts/bulk/${jobId}`, (j) => setJob({ type: action, ...j }));
      // Back to the first page: it is the one that carries the new total.
      resetPaging();
      page.reload();
    });

  return (
    <Page
      title="Contacts"
      actions={
        <>
          <button type="button" className="primary" onClick={() => setCreating(true)}>
            New contact
          </button>
          <CsvImportButton endpoint="/contacts/import" inputId="csv-file"
            onJob={(j) => {
              setJobLabel("CSV import");
              setJob(j);
            }}
            onDone={() => {
              resetPaging();
              page.reload();
            }}
          />
        </>
      }
    >
      <form
        className="row filters"
        role="search"
        onSubmit={(e) => {
          e.preventDefault();
          setQuery(search);
          resetPaging();
        }}
      >
        <TextInput label="Search email" type="search" value={search} onChange={setSearch} />
        <Select label="Subscription" value={subscribed} onChange={(v) => { setSubscribed(v); resetPaging(); }} options={[{ value: "", label: "All" }, { value: "true", label: "Subscribed" }, { value: "false", label: "Unsubscribed" }]} />
        <Select label="Sort by" value={sort} onChange={(v) => { setSort(v); resetPaging(); }} options={[{ value: "createdAt", label: "Created" }, { value: "email", label: "Email" }]} />
        <Select label="Order" value={dir} onChange={(v) => { setDir(v); resetPaging(); }} options={[{ value: "desc", label: "Descending" }, { value: "asc", label: "Ascending" }]} />
        <button type="submit">Search</button>
      </form>
      <ErrorBanner error={page.error ?? act.error} />
      <JobStatus job={job} label={jobLabel} />
      {selected.size > 0 && (
        <div className="row bulkbar" role="region" aria-label="Bulk actions">
          <span>{selected.size} selected</span>
          <button type="button" disabled={act.busy} onClick={() => bulk("bulk-subscribe", "Bulk subscribe")}>Subscribe</button>
          <button type="button" disabled={act.busy} onClick={() => bulk("bulk-unsubscribe", "Bulk unsubscribe")}>Unsubscribe</button>
          <button type="button" disabled={act.busy} className="danger" onClick={() => bulk("bulk-delete", "Bulk delete")}>Delete</button>
        </div>
      )}
      {page.loading && !page.data ? (
        <Loading />
      ) : rows.length === 0 ? (
        <Empty>No contacts{query ? ` matching "${query}"` : ""}. Add one, import a CSV, or track an event with the API.</Empty>
      ) : (
        <Table
          caption="Contacts"
          head={[
            <input
              type="checkbox"
              aria-label="Select all on this page"
              checked={allSelected}
              onChange={(e) => setSelected(e.target.checked ? new Set(rows.map((r) => r.id)) : new Set())}
            />,
            "Email",
            "Subscribed",
            "Data",
            "Created",
          ]}
        >
            {rows.map((c) => (
              <tr key={c.id}>
                <td>
                  <input
                    type="checkbox"
                    aria-label={`Select ${c.email}`}
                    checked={selected.has(c.id)}
                    onChange={(e) => {
                      const s = new Set(selected);
                      if (e.target.checked) s.add(c.id);
                      else s.delete(c.id);
                      setSelected(s);
                    }}
                  />
                </td>
                <td>
                  <Link href={`/contacts/${c.id}`}>{c.email}</Link>
                </td>
                <td>{c.subscribed ? <Badge tone="ok">yes</Badge> : c.pendingConfirmation ? <Badge tone="pending">pending confirmation</Badge> : <Badge tone="muted">no</Badge>}</td>
                <td className="clip">{Object.entries(c.data ?? {}).map(([k, v]) => `${k}: ${typeof v === "object" ? JSON.stringify(v) : String(v)}`).join(", ")}</td>
                <td>{fmtDate(c.createdAt)}</td>
              </tr>
            ))}
        </Table>
      )}
      <Pager
        info={`${rows.length === 0 ? `0 of ${total}` : `${first}–${Math.max(last, first)} of ${Math.max(total, last)}`} · page ${cursors.length} of ${Math.max(pages, cursors.length)}`}
        hasPrev={cursors.length > 1}
        hasNext={!!page.data?.hasMore}
        onPrev={() => setCursors(cursors.slice(0, -1))}
        onNext={() => page.data?.cursor && setCursors([...cursors, page.data.cursor])}
      />
      <Modal open={creating} title="New contact" onClose={() => setCreating(false)}>
        <ContactForm
          onSaved={() => {
            setCreating(false);
            resetPaging();
            page.reload();
          }}
          onCancel={() => setCreating(false)}
        />
      </Modal>
    </Page>
  );
}


function parseData(text: string): Record<string, unknown> {
  const v = text.trim() ? JSON.parse(text) : {};
  if (!v || typeof v !== "object" || Array.isArray(v)) throw new Error("Data must be a JSON object");
  return v;
}

function ContactForm({ contact, onSaved, onCancel }: { contact?: Contact; onSaved: (c: Contact) => void; onCancel?: () => void }) {
  const [email, setEmail] = useState(contact?.email ?? "");
  const [subscribed, setSubscribed] = useState(contact?.subscribed ?? true);
  const [data, setData] = useState(JSON.stringify(contact?.data ?? {}, null, 2));
  const act = useAction();
  const [existing, setExisting] = useState<{ id: string; email: string } | null>(null);
  return (
    <form
      onSubmit={(e) => {
        e.preventDefault();
        void act.run(async () => {
          let parsed: Record<string, unknown>;
          try {
            parsed = parseData(data);
          } catch (err) {
            throw new Error(`Data is not valid JSON: ${(err as Error).message}`);
          }
          if (contact) {
            // Keys removed in the editor are deleted (null deletes a key).
            for (const k of Object.keys(contact.data ?? {})) if (!(k in parsed)) parsed[k] = null;
            const c = await api<Contact>(`/contacts/${contact.id}`, { method: "PATCH", body: { email, subscribed, data: parsed } });
            onSaved(c);
          } else {
            // POST /contacts is an upsert: it would silently merge into (and resubscribe) an existing contact.
            setExisting(null);
            const { found } = await api<{ found: { id: string; email: string }[] }>("/contacts/lookup", { body: { emails: [email] } });
            if (found[0]) {
              setExisting(found[0]);
              return;
            }
            const c = await api<Contact>("/contacts", { body: { email, subscribed, data: parsed } });
            onSaved(c);
          }
        });
      }}
    >
      <ErrorBanner error={act.error} />
      {existing && (
        <div className="banner error" role="alert">
          A contact with this email already exists: <Link href={`/contacts/${existing.id}`}>open {existing.email}</Link> to edit it.
        </div>
      )}
      <TextInput label="Email" type="email" value={email} onChange={setEmail} required />
      <Checkbox label="Subscribed" checked={subscribed} onChange={setSubscribed} />
      {contact?.pendingConfirmation && (
        <p className="hint">
          <Badge tone="pending">pending confirmation</Badge> Subscribed through the public key with double opt-in on: waiting for the confirmation link. Ticking "Subscribed" here subscribes at once.
        </p>
      )}
      <TextArea label="Data (JSON object)" rows={6} mono value={data} onChange={setData} />
      <div className="row">
        <button type="submit" className="primary" disabled={act.busy}>
          Save
        </button>
        {onCancel && (
          <button type="button" onClick={onCancel}>
            Cancel
          </button>
        )}
      </div>
    </form>
  );
}

interface Suppressed {
  email: string;
  reason: string;
  createdAt: string;
}

const SUPPRESSED_BECAUSE: Record<string, string> = { HARD_BOUNCE: "a hard bounce", COMPLAINT: "a complaint", MANUAL: "added by hand", UNSUBSCRIBE: "an unsubscribe" };

interface EventRow {
  id: string;
  name: string;
  data?: Record<string, unknown>;
  createdAt: string;
}

export function ContactPage({ id }: { id: string }) {
  const c = useAsync(() => api<Contact>(`/contacts/${id}`), [id]);
  const events = useAsync(() => api<CursorPage<EventRow>>(`/events/contact/${id}`, { query: { limit: 100 } }), [id]);
  const emails = useAsync(() => api<CursorPage<any>>("/emails", { query: { contactId: id, limit: 50 } }), [id]);
  // A suppressed address is never sent to, whatever its subscription: said here, with the way to lift it.
  const address = c.data?.email.toLowerCase();
  const suppression = useAsync(
    () => (address ? api<CursorPage<Suppressed>>("/suppressions", { query: { email: address, limit: 10 } }).then((p) => p.data.find((s) => s.email === address) ?? null) : Promise.resolve(null)),
    [address],
  );
  const [saved, setSaved] = useState(false);
  const del = useAction();
  const [, navigate] = useLocation();
  if (c.error) return <Page title="Contact"><ErrorBanner error={c.error} /></Page>;
  if (!c.data) return <Loading />;
  const contact = c.data;
  return (
    <Page
      title={contact.email}
      actions={
        <button
          type="button"
          className="danger"
          onClick={() => {
            if (!confirm(`Delete ${contact.email} permanently?`)) return;
            void del.run(async () => {
              await api(`/contacts/${id}`, { method: "DELETE" });
              navigate("/contacts");
            });
          }}
        >
          Delete contact
        </button>
      }
    >
      <ErrorBanner error={del.error} />
      {suppression.data && (
        <Notice kind="warn">
          {contact.email} is suppressed ({SUPPRESSED_BECAUSE[suppression.data.reason] ?? suppression.data.reason}, {fmtDate(suppression.data.createdAt)}): no email is sent to it. Lift it on the{" "}
          <Link href="/suppressions">Suppressions</Link> page to send to it again.
        </Notice>
      )}
      <div className="grid2">
        <section className="card" aria-labelledby="c-edit">
          <h2 id="c-edit">Details</h2>
          {saved && <Notice kind="ok">Saved.</Notice>}
          <p className="hint">
            Created {fmtDate(contact.createdAt)} · updated {fmtDate(contact.updatedAt)}
          </p>
          <ContactForm
            key={contact.updatedAt}
            contact={contact}
            onSaved={(n) => {
              c.setData(n);
              setSaved(true);
              events.reload();
            }}
          />
        </section>
        <section className="card" aria-labelledby="c-events">
          <h2 id="c-events">Events</h2>
          <ErrorBanner error={events.error} />
          {events.data?.data.length === 0 && <Empty>No events yet.</Empty>}
          <ol className="timeline">
            {events.data?.data.map((e) => (
              <li key={e.id}>
                <time dateTime={e.createdAt}>{fmtDate(e.createdAt)}</time> <strong>{e.name}</strong>
                {e.data && Object.keys(e.data).length > 0 && <Details data={e.data} />}
              </li>
            ))}
          </ol>
        </section>
      </div>
      <section className="card" aria-labelledby="c-emails">
        <h2 id="c-emails">Emails</h2>
        <ErrorBanner error={emails.error} />
        {emails.data?.data.length === 0 ? <Empty>No emails sent to this contact.</Empty> : <EmailTable rows={emails.data?.data ?? []} />}
      </section>
    </Page>
  );
}

export function EmailTable({ rows }: { rows: any[] }) {
  return (
    <div className="scroll-x">
      <table>
        <thead>
          <tr>
            <th scope="col">Subject</th>
            <th scope="col">To</th>
            <th scope="col">Status</th>
            <th scope="col">Source</th>
            <th scope="col">Attempts</th>
            <th scope="col">Last reply</th>
            <th scope="col">Created</th>
          </tr>
        </thead>
        <tbody>
          {rows.map((m) => (
            <tr key={m.id}>
              <td>
                <Link href={`/emails/${m.id}`}>{m.subject || "(no subject)"}</Link>
              </td>
              <td>{m.to}</td>
              <td>
                <Badge>{m.status}</Badge>
                {m.sandbox && (
                  <>
                    {" "}
                    <Badge tone="draft">sandbox</Badge>
                  </>
                )}
              </td>
              <td>{m.sourceType}</td>
              <td>{m.attempts}</td>
              <td className="clip" title={m.lastReply ?? ""}>{m.lastReply ?? "—"}</td>
              <td>{fmtDate(m.createdAt)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
