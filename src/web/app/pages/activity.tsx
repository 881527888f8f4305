import { useState } from "react";
import { Link } from "wouter";
import { api, fmtDate, listOf, type CursorPage } from "../api";
import { Badge, Empty, ErrorBanner, Loading, Page, Select, TextInput, useAsync } from "../ui";

interface Item {
  id: string;
  type: string;
  timestamp: string;
  contactId?: string;
  contactEmail?: string;
  metadata?: Record<string, unknown>;
}

export function ActivityPage() {
  const types = useAsync(() => api<string[]>("/activity/types").then(listOf<string>), []);
  const [type, setType] = useState("");
  const [name, setName] = useState("");
  const [nameQuery, setNameQuery] = useState("");
  const [cursors, setCursors] = useState<(string | null)[]>([null]);
  const cursor = cursors[cursors.length - 1];
  const feed = useAsync(() => api<CursorPage<Item>>("/activity", { query: { type, name: nameQuery, cursor, limit: 50 } }), [type, nameQuery, cursor]);
  const upcoming = useAsync(() => api<any[]>("/activity/upcoming", { query: { limit: 10 } }).then(listOf<any>), []);
  return (
    <Page title="Activity">
      <form className="row filters" role="search" onSubmit={(e) => { e.preventDefault(); setNameQuery(name); setCursors([null]); }}>
        <Select label="Type" value={type} onChange={(v) => { setType(v); setCursors([null]); }} options={[{ value: "", label: "All types" }, ...(types.data ?? []).map((t) => ({ value: t, label: t }))]} />
        <TextInput label="Event name" value={name} onChange={setName} />
        <button type="submit">Filter</button>
        <button type="button" onClick={() => feed.reload()}>Refresh</button>
      </form>
      <ErrorBanner error={feed.error} />
      {feed.loading && !feed.data ? <Loading /> : feed.data?.data.length === 0 ? <Empty>No activity yet.</Empty> : (
        <table>
          <thead><tr><th scope="col">When</th><th scope="col">Type</th><th scope="col">Contact</th><th scope="col">Details</th></tr></thead>
          <tbody>
            {feed.data?.data.map((a) => (
              <tr key={a.id}>
                <td>{fmtDate(a.timestamp)}</td>
                <td><Badge tone="neutral">{a.type}</Badge></td>
                <td>{a.contactId ? <Link href={`/contacts/${a.contactId}`}>{a.contactEmail ?? a.contactId}</Link> : "—"}</td>
                <td className="clip"><code className="small-code">{a.metadata ? JSON.stringify(a.metadata) : ""}</code></td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <nav className="row pager" aria-label="Pages">
        <button type="button" disabled={cursors.length <= 1} onClick={() => setCursors(cursors.slice(0, -1))}>Previous</button>
        <button type="button" disabled={!feed.data?.hasMore} onClick={() => feed.data?.cursor && setCursors([...cursors, feed.data.cursor])}>Next</button>
      </nav>
      <section className="card" aria-labelledby="upcoming-h">
        <h2 id="upcoming-h">Upcoming</h2>
        {upcoming.data?.length === 0 && <Empty>Nothing scheduled.</Empty>}
        <ul>
          {upcoming.data?.map((u, i) => <li key={u.id ?? i}>{fmtDate(u.at)} · <strong>{u.type}</strong> {u.details ? <code className="small-code">{JSON.stringify(u.details)}</code> : null}</li>)}
        </ul>
      </section>
    </Page>
  );
}
