import { useState } from "react";
import { Link, useLocation } from "wouter";
import { api, fmtDate, listOf, type OffsetPage } from "../api";
import { ConditionBuilder, emptyTree, useLiveCount, type Tree } from "../components/conditions";
import { Badge, Checkbox, Empty, ErrorBanner, Loading, Notice, Page, Select, TextArea, TextInput, useAction, useAsync, Table, Pager, DeleteButton } from "../ui";
import type { Contact } from "./contacts";

export interface Segment {
  id: string;
  name: string;
  slug?: string;
  description: string | null;
  type: "DYNAMIC" | "STATIC";
  condition: Tree | null;
  trackMembership: boolean;
  memberCount: number;
  createdAt: string;
  updatedAt: string;
}

export function SegmentsPage() {
  const list = useAsync(() => api<Segment[]>("/segments").then(listOf<Segment>), []);
  const [, navigate] = useLocation();
  return (
    <Page title="Segments" actions={<button type="button" className="primary" onClick={() => navigate("/segments/new")}>New segment</button>}>
      <ErrorBanner error={list.error} />
      {list.loading && !list.data ? <Loading /> : list.data?.length === 0 ? <Empty>No segments yet.</Empty> : (
        <Table head={["Name", "Type", "Members", "Tracked", "Created"]}>
            {list.data?.map((s) => (
              <tr key={s.id}>
                <td><Link href={`/segments/${s.id}`}>{s.name}</Link>{s.description && <div className="hint">{s.description}</div>}</td>
                <td><Badge tone="neutral">{s.type}</Badge></td>
                <td>{s.memberCount}</td>
                <td>{s.trackMembership ? "yes" : "no"}</td>
                <td>{fmtDate(s.createdAt)}</td>
              </tr>
            ))}
          </Table>
      )}
    </Page>
  );
}

export function SegmentPage({ id }: { id: string }) {
  const isNew = id === "new";
  const seg = useAsync(() => (isNew ? Promise.resolve(null) : api<Segment>(`/segments/${id}`)), [id]);
  if (seg.error) return <Page title="Segment"><ErrorBanner error={seg.error} /></Page>;
  if (seg.loading && !seg.data) return <Loading />;
  return <SegmentEditor key={id + (seg.data?.updatedAt ?? "")} segment={seg.data ?? null} reload={seg.reload} />;
}

function SegmentEditor({ segment, reload }: { segment: Segment | null; reload: () => void }) {
  const [name, setName] = useState(segment?.name ?? "");
  const [description, setDescription] = useState(segment?.description ?? "");
  const [type, setType] = useState<Segment["type"]>(segment?.type ?? "DYNAMIC");
  const [track, setTrack] = useState(segment?.trackMembership ?? false);
  const [tree, setTree] = useState<Tree>(segment?.condition ?? emptyTree());
  const [note, setNote] = useState("");
  const act = useAction();
  const [, navigate] = useLocation();
  const live = useLiveCount(type === "DYNAMIC" ? tree : null);

  const save = () =>
    void act.run(async () => {
      setNote("");
      const body: Record<string, unknown> = { name, description: description || undefined, trackMembership: track };
      if (type === "DYNAMIC") body.condition = tree;
      if (segment) {
        await api(`/segments/${segment.id}`, { method: "PATCH", body });
        setNote("Segment saved.");
        reload();
      } else {
        const s = await api<Segment>("/segments", { body: { ...body, type } });
        navigate(`/segments/${s.id}`, { replace: true });
      }
    });

  return (
    <Page
      title={segment ? `Segment: ${segment.name}` : "New segment"}
      actions={segment && (
        <>
          <button type="button" onClick={() => void act.run(async () => {
            const r = await api<{ memberCount: number }>(`/segments/${segment.id}/refresh`, { method: "POST" });
            setNote(`Count refreshed: ${r.memberCount} members.`);
          })}>Refresh count</button>
          <button type="button" onClick={() => void act.run(async () => {
            const r = await api<{ added: number; removed: number; total: number }>(`/segments/${segment.id}/compute`, { method: "POST" });
            setNote(`Computed: ${r.added} joined, ${r.removed} left, ${r.total} members.`);
            reload();
          })}>Compute membership</button>
          <DeleteButton what="segment" name={segment.name} path={`/segments/${segment.id}`} act={act} done={() => navigate("/segments")} />
        </>
      )}
    >
      <ErrorBanner error={act.error} />
      {note && <Notice kind="ok">{note}</Notice>}
      {segment && <p className="hint">{segment.memberCount} members (cached) · slug <code>{segment.slug}</code> · events <code>segment.{segment.slug}.entry</code>/<code>.exit</code> when tracked</p>}
      <form className="card" onSubmit={(e) => { e.preventDefault(); save(); }}>
        <div className="row">
          <TextInput label="Segment name" value={name} onChange={setName} required />
          <TextInput label="Description" value={description} onChange={setDescription} />
          {!segment && <Select label="Segment type" value={type} onChange={setType} options={[{ value: "DYNAMIC", label: "Dynamic (conditions)" }, { value: "STATIC", label: "Static (manual list)" }]} />}
        </div>
        <Checkbox label="Track membership (emit entry and exit events)" checked={track} onChange={setTrack} />
        {type === "DYNAMIC" && (
          <>
            <ConditionBuilder value={tree} onChange={setTree} label="Contacts matching" />
            <p aria-live="polite" className="count">
              {live.count !== null ? <>Matches <strong data-testid="live-count">{live.count}</strong> contacts right now.</> : live.error ? <span className="hint">{live.error}</span> : null}
            </p>
          </>
        )}
        <button type="submit" className="primary" disabled={act.busy}>{segment ? "Save segment" : "Create segment"}</button>
      </form>
      {segment && <Members segment={segment} onChange={reload} />}
    </Page>
  );
}

function Members({ segment, onChange }: { segment: Segment; onChange: () => void }) {
  const [page, setPage] = useState(1);
  const list = useAsync(() => api<OffsetPage<Contact>>(`/segments/${segment.id}/contacts`, { query: { page, pageSize: 25 } }), [segment.id, page]);
  const [emails, setEmails] = useState("");
  const [createMissing, setCreateMissing] = useState(false);
  const [note, setNote] = useState("");
  const act = useAction();
  const parsed = () => emails.split(/[\s,;]+/).map((s) => s.trim()).filter(Boolean);
  return (
    <section className="card" aria-labelledby="members-h">
      <h2 id="members-h">Members</h2>
      <ErrorBanner error={list.error ?? act.error} />
      {note && <Notice kind="ok">{note}</Notice>}
      {segment.type === "STATIC" && (
        <form className="row top" onSubmit={(e) => e.preventDefault()}>
          <TextArea label="Emails (one per line)" rows={3} value={emails} onChange={setEmails} className="grow" />
          <div>
            <Checkbox label="Create missing contacts" checked={createMissing} onChange={setCreateMissing} />
            <div className="row">
              <button type="button" onClick={() => void act.run(async () => {
                const r = await api<{ added: number; created: number; notFound: string[] }>(`/segments/${segment.id}/members`, { body: { emails: parsed(), createMissing } });
                setNote(`${r.added} added, ${r.created} created${r.notFound.length ? `, not found: ${r.notFound.join(", ")}` : ""}.`);
                setEmails("");
                list.reload();
                onChange();
              })}>Add members</button>
              <button type="button" onClick={() => void act.run(async () => {
                const r = await api<{ removed: number }>(`/segments/${segment.id}/members`, { method: "DELETE", body: { emails: parsed() } });
                setNote(`${r.removed} removed.`);
                setEmails("");
                list.reload();
                onChange();
              })}>Remove members</button>
            </div>
          </div>
        </form>
      )}
      {list.data?.data.length === 0 ? <Empty>No members.</Empty> : (
        <Table head={["Email", "Subscribed", "Created"]}>
            {list.data?.data.map((c) => (
              <tr key={c.id}><td><Link href={`/contacts/${c.id}`}>{c.email}</Link></td><td>{c.subscribed ? "yes" : "no"}</td><td>{fmtDate(c.createdAt)}</td></tr>
            ))}
          </Table>
      )}
      {list.data && (
        <Pager label="Member pages" info={`${list.data.total} members`} hasPrev={page > 1} hasNext={page < (list.data.totalPages ?? 1)} onPrev={() => setPage(page - 1)} onNext={() => setPage(page + 1)} />
      )}
    </section>
  );
}
