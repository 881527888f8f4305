import { useState } from "react";
import { api, type CursorPage } from "../api";
import { Empty, ErrorBanner, Loading, Page, Pager, Select, TextInput, useAsync, useCursorPages } from "../ui";
import { EmailTable } from "./contacts";

const STATUSES = ["", "PENDING", "SENDING", "SENT", "DELIVERED", "DEFERRED", "OPENED", "CLICKED", "BOUNCED", "COMPLAINED", "FAILED", "SUPPRESSED", "CANCELLED"];

export function EmailsPage() {
  const [status, setStatus] = useState("");
  const [to, setTo] = useState("");
  const [toQuery, setToQuery] = useState("");
  const pages = useCursorPages();
  const cursor = pages.cursor;
  const list = useAsync(() => api<CursorPage<any>>("/emails", { query: { status, to: toQuery, cursor, limit: 50 } }), [status, toQuery, cursor]);
  return (
    <Page title="Emails">
      <p className="hint">Every message with its delivery status, attempts and the remote server's last reply: the answer to "did my email arrive?".</p>
      <form className="row filters" role="search" onSubmit={(e) => { e.preventDefault(); setToQuery(to); pages.reset(); }}>
        <Select label="Status" value={status} onChange={(v) => { setStatus(v); pages.reset(); }} options={STATUSES.map((s) => ({ value: s, label: s || "Any status" }))} />
        <TextInput label="Recipient" value={to} onChange={setTo} />
        <button type="submit">Filter</button>
        <button type="button" onClick={() => list.reload()}>Refresh</button>
      </form>
      <ErrorBanner error={list.error} />
      {list.loading && !list.data ? <Loading /> : list.data?.data.length === 0 ? <Empty>No emails.</Empty> : <EmailTable rows={list.data?.data ?? []} />}
      <Pager hasPrev={pages.page > 1} hasNext={!!list.data?.hasMore} onPrev={pages.prev} onNext={() => pages.next(list.data?.cursor)} />
    </Page>
  );
}
