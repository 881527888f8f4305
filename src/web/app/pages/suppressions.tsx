import { CsvImportButton } from "../components/csv-import";
import { useState } from "react";
import { api, fmtDate, type CursorPage } from "../api";
import { Link } from "wouter";
import { Badge, Empty, ErrorBanner, Loading, Notice, Page, Pager, Progress, Select, TextInput, useAction, useAsync, useCursorPages } from "../ui";

interface Suppression {
  id: string;
  email: string;
  reason: "HARD_BOUNCE" | "COMPLAINT" | "MANUAL" | "UNSUBSCRIBE";
  detail: string | null;
  source: { type: "EMAIL" | "API" | "IMPORT"; emailId: string | null; jobId: string | null };
  createdAt: string;
}

const REASONS = [
  { value: "", label: "Any reason" },
  { value: "HARD_BOUNCE", label: "Hard bounce" },
  { value: "COMPLAINT", label: "Complaint" },
  { value: "MANUAL", label: "Manual" },
  { value: "UNSUBSCRIBE", label: "Unsubscribe" },
];
const REASON_TONE: Record<Suppression["reason"], string> = { HARD_BOUNCE: "bounced", COMPLAINT: "complained", MANUAL: "muted", UNSUBSCRIBE: "muted" };
const reasonLabel = (r: string) => REASONS.find((x) => x.value === r)?.label ?? r;
const SOURCE_LABEL = { EMAIL: "Email", API: "Added by hand or API", IMPORT: "CSV import" } as const;

export function SuppressionsPage() {
  const [reason, setReason] = useState("");
  const [search, setSearch] = useState("");
  const [query, setQuery] = useState("");
  const pages = useCursorPages();
  const cursor = pages.cursor;
  const list = useAsync(() => api<CursorPage<Suppression>>("/suppressions", { query: { reason, email: query, cursor, limit: 50 } }), [reason, query, cursor]);
  const [email, setEmail] = useState("");
  const [detail, setDetail] = useState("");
  const [note, setNote] = useState("");
  const [job, setJob] = useState<any>(null);
  const act = useAction();
  const reload = () => {
    pages.reset();
    list.reload();
  };
  return (
    <Page title="Suppressions" actions={<CsvImportButton endpoint="/suppressions/import" inputId="suppressions-csv" onJob={setJob} onDone={reload} />}>
      <p className="hint">
        Addresses on this list are never attempted: sends to them are recorded <code>SUPPRESSED</code>. Hard bounces and complaints add them automatically; lifting one lets later sends go out again
        (the contact's subscription does not change).
      </p>
      <form
        className="card row"
        aria-label="Suppress an address"
        onSubmit={(e) => {
          e.preventDefault();
          setNote("");
          void act.run(async () => {
            const s = await api<Suppression>("/suppressions", { body: { email, detail: detail || undefined } });
            setNote(`${s.email} is suppressed.`);
            setEmail("");
            setDetail("");
            reload();
          });
        }}
      >
        <TextInput label="Email address" type="email" value={email} onChange={setEmail} required />
        <TextInput label="Note (optional)" value={detail} onChange={setDetail} />
        <button type="submit" className="primary" disabled={act.busy}>Suppress</button>
      </form>
      {job && (job.state === "completed" ? (
        <Notice kind="ok">CSV import: {job.result.created} suppressed, {job.result.updated} already on the list, {job.result.failed} rows failed{job.result.errors.length ? ` (${job.result.errors.slice(0, 5).map((e: any) => `row ${e.row}: ${e.error}`).join("; ")})` : ""}.</Notice>
      ) : job.state === "failed" ? (
        <Notice kind="warn">CSV import failed: {job.error}</Notice>
      ) : (
        <Progress value={job.progress ?? 0} label="CSV import" />
      ))}
      {note && <Notice kind="ok">{note}</Notice>}
      <ErrorBanner error={list.error ?? act.error} />
      <form className="row filters" role="search" onSubmit={(e) => { e.preventDefault(); setQuery(search); pages.reset(); }}>
        <Select label="Reason" value={reason} onChange={(v) => { setReason(v); pages.reset(); }} options={REASONS} />
        <TextInput label="Search addresses" value={search} onChange={setSearch} />
        <button type="submit">Search</button>
      </form>
      {list.loading && !list.data ? (
        <Loading />
      ) : list.data?.data.length === 0 ? (
        <Empty>No suppressed addresses{query || reason ? " match" : ""}.</Empty>
      ) : (
        <div className="scroll-x">
          <p className="hint">{pages.page === 1 ? `${list.data?.total ?? 0} suppressed` : ""}</p>
          <table>
            <thead>
              <tr>
                <th scope="col">Address</th>
                <th scope="col">Reason</th>
                <th scope="col">Why</th>
                <th scope="col">Source</th>
                <th scope="col">Since</th>
                <th scope="col"><span className="sr-only">Actions</span></th>
              </tr>
            </thead>
            <tbody>
              {list.data?.data.map((s) => (
                <tr key={s.id}>
                  <td>{s.email}</td>
                  <td><Badge tone={REASON_TONE[s.reason]}>{reasonLabel(s.reason)}</Badge></td>
                  <td className="clip" title={s.detail ?? ""}>{s.detail ?? "—"}</td>
                  <td>
                    {s.source.type === "EMAIL" && s.source.emailId ? (
                      <Link href={`/emails/${s.source.emailId}`}>View source email</Link>
                    ) : (
                      SOURCE_LABEL[s.source.type]
                    )}
                  </td>
                  <td>{fmtDate(s.createdAt)}</td>
                  <td>
                    <button
                      type="button"
                      className="small"
                      aria-label={`Lift suppression of ${s.email}`}
                      onClick={() => {
                        if (!confirm(`Lift the suppression of ${s.email}? Later sends to it will be attempted again.`)) return;
                        void act.run(async () => {
                          await api(`/suppressions/${s.id}`, { method: "DELETE" });
                          setNote(`${s.email} is no longer suppressed.`);
                          list.reload();
                        });
                      }}
                    >
                      Lift
                    </button>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      <Pager hasPrev={pages.page > 1} hasNext={!!list.data?.hasMore} onPrev={pages.prev} onNext={() => pages.next(list.data?.cursor)} />
    </Page>
  );
}

