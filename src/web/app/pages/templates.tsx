import { FilePicker } from "../components/file-picker";
import { useEffect, useRef, useState } from "react";
import { Link, useLocation } from "wouter";
import { api, fmtDate, type OffsetPage } from "../api";
import { Badge, Empty, ErrorBanner, Loading, Notice, Page, Select, TextInput, toApiError, useAction, useAsync, Table, DeleteButton, OffsetPager, SearchForm } from "../ui";
import type { ApiError } from "../api";
import { OpenTrackingField } from "../components/open-tracking";

export interface Template {
  id: string;
  name: string;
  description: string | null;
  subject: string;
  body: string;
  from: string;
  fromName: string | null;
  replyTo: string | null;
  type: "TRANSACTIONAL" | "MARKETING" | "HEADLESS";
  /** The open pixel: null = the project's tracking mode. */
  trackOpens: boolean | null;
  createdAt: string;
  updatedAt: string;
}

const TYPES = ["TRANSACTIONAL", "MARKETING", "HEADLESS"] as const;

export function TemplatesPage() {
  const [search, setSearch] = useState("");
  const [query, setQuery] = useState("");
  const [type, setType] = useState<"" | Template["type"]>("");
  const [page, setPage] = useState(1);
  const list = useAsync(() => api<OffsetPage<Template>>("/templates", { query: { search: query, type, page, pageSize: 20 } }), [query, type, page]);
  const [, navigate] = useLocation();
  return (
    <Page title="Templates" actions={<button type="button" className="primary" onClick={() => navigate("/templates/new")}>New template</button>}>
      <SearchForm value={search} onChange={setSearch} onSearch={() => { setQuery(search); setPage(1); }}>
        <Select label="Type" value={type} onChange={(v) => { setType(v); setPage(1); }} options={[{ value: "", label: "All types" }, ...TYPES.map((t) => ({ value: t, label: t }))]} />
      </SearchForm>
      <ErrorBanner error={list.error} />
      {list.loading && !list.data ? <Loading /> : list.data?.data.length === 0 ? <Empty>No templates yet.</Empty> : (
        <Table head={["Name", "Subject", "Type", "From", "Updated"]}>
            {list.data?.data.map((t) => (
              <tr key={t.id}>
                <td><Link href={`/templates/${t.id}`}>{t.name}</Link></td>
                <td>{t.subject}</td>
                <td><Badge>{t.type}</Badge></td>
                <td>{t.from}</td>
                <td>{fmtDate(t.updatedAt)}</td>
              </tr>
            ))}
          </Table>
      )}
      <OffsetPager page={page} totalPages={list.data?.totalPages} onPage={setPage} />
    </Page>
  );
}

/** Live preview through POST /templates/preview (our own renderer), debounced. */
export function Preview({ subject, body, sample }: { subject: string; body: string; sample: string }) {
  const [out, setOut] = useState<{ subject: string; html: string } | null>(null);
  const [error, setError] = useState<ApiError | null>(null);
  useEffect(() => {
    const t = setTimeout(() => {
      let data: Record<string, unknown> = {};
      try {
        data = sample.trim() ? JSON.parse(sample) : {};
      } catch {
        setError(toApiError(new Error("Sample data is not valid JSON")));
        return;
      }
      const { email, ...rest } = data as { email?: string };
      api<{ subject: string; html: string }>("/templates/preview", { body: { subject, body, email, data: rest } }).then(
        (r) => {
          setOut(r);
          setError(null);
        },
        (e) => setError(toApiError(e)),
      );
    }, 250);
    return () => clearTimeout(t);
  }, [subject, body, sample]);
  return (
    <section className="preview" aria-labelledby="preview-h">
      <h2 id="preview-h">Preview</h2>
      <ErrorBanner error={error} />
      {out && (
        <>
          <div className="preview-subject">
            <span className="hint">Subject:</span> <span data-testid="preview-subject">{out.subject}</span>
          </div>
          <iframe title="Email preview" sandbox="" srcDoc={out.html} />
        </>
      )}
    </section>
  );
}

export function UploadImage({ onUploaded }: { onUploaded: (url: string) => void }) {
  const act = useAction();
  return (
    <span>
      <FilePicker label="Upload image" inputId="image-upload" className="button small" accept="image/png,image/jpeg,image/gif,image/webp" onFile={(file) => void act.run(async () => {
        const form = new FormData();
        form.set("file", file);
        const r = await api<{ url: string }>("/uploads/image", { form });
        onUploaded(r.url);
      })} />
      <ErrorBanner error={act.error} />
    </span>
  );
}

const STARTER = `<h1>Hello {{ firstName ?? "there" }}!</h1>\n<p>Thanks for joining {{ data.company ?? "us" }}.</p>`;

export function TemplateEditorPage({ id }: { id: string }) {
  const isNew = id === "new";
  const loaded = useAsync(() => (isNew ? Promise.resolve(null) : api<Template>(`/templates/${id}`)), [id]);
  if (loaded.error) return <Page title="Template"><ErrorBanner error={loaded.error} /></Page>;
  if (loaded.loading && !loaded.data) return <Loading />;
  return <TemplateEditor key={id} template={loaded.data ?? null} />;
}

function TemplateEditor({ template }: { template: Template | null }) {
  const [name, setName] = useState(template?.name ?? "");
  const [description, setDescription] = useState(template?.description ?? "");
  const [subject, setSubject] = useState(template?.subject ?? "Welcome, {{ firstName ?? \"friend\" }}");
  const [from, setFrom] = useState(template?.from ?? "");
  const [fromName, setFromName] = useState(template?.fromName ?? "");
  const [replyTo, setReplyTo] = useState(template?.replyTo ?? "");
  const [type, setType] = useState<Template["type"]>(template?.type ?? "MARKETING");
  const [body, setBody] = useState(template?.body ?? STARTER);
  const [trackOpens, setTrackOpens] = useState<boolean | null>(template?.trackOpens ?? null);
  const [sample, setSample] = useState('{\n  "email": "jane@example.com",\n  "firstName": "Jane",\n  "company": "Acme"\n}');
  const [saved, setSaved] = useState(false);
  const act = useAction();
  const [, navigate] = useLocation();
  const bodyRef = useRef<HTMLTextAreaElement>(null);
  const usage = useAsync(() => (template ? api<{ campaigns: any[]; workflows: any[] }>(`/templates/${template.id}/usage`) : Promise.resolve(null)), [template?.id]);

  const save = () =>
    void act.run(async () => {
      setSaved(false);
      const payload = { name, description: description || null, subject, from, fromName: fromName || null, replyTo: replyTo || null, type, body, trackOpens };
      if (template) {
        await api(`/templates/${template.id}`, { method: "PATCH", body: payload });
        setSaved(true);
      } else {
        const t = await api<Template>("/templates", { body: payload });
        navigate(`/templates/${t.id}`, { replace: true });
      }
    });

  return (
    <Page
      title={template ? `Template: ${template.name}` : "New template"}
      actions={
        template && (
          <>
            <button type="button" onClick={() => void act.run(async () => {
              const t = await api<Template>(`/templates/${template.id}/duplicate`, { method: "POST" });
              navigate(`/templates/${t.id}`);
            })}>Duplicate</button>
            <DeleteButton what="template" name={template.name} path={`/templates/${template.id}`} act={act} done={() => navigate("/templates")} />
          </>
        )
      }
    >
      <ErrorBanner error={act.error} />
      {saved && <Notice kind="ok">Template saved.</Notice>}
      <div className="editor">
        <form className="card" onSubmit={(e) => { e.preventDefault(); save(); }}>
          <TextInput label="Name" value={name} onChange={setName} required />
          <TextInput label="Description (internal)" value={description} onChange={setDescription} />
          <TextInput label="Subject" value={subject} onChange={setSubject} required />
          <div className="row">
            <TextInput label="From address" type="email" value={from} onChange={setFrom} required hint="Its domain must be verified." />
            <TextInput label="From name" value={fromName} onChange={setFromName} />
          </div>
          <div className="row">
            <TextInput label="Reply-to" type="email" value={replyTo} onChange={setReplyTo} />
            <Select label="Type" value={type} onChange={setType} options={[...TYPES]} />
          </div>
          <div className="field">
            <div className="row spread">
              <label htmlFor="tpl-body">Body (HTML)</label>
              <UploadImage onUploaded={(url) => {
                const ta = bodyRef.current;
                const tag = `<img src="${url}" alt="">`;
                const pos = ta ? ta.selectionStart : body.length;
                setBody(body.slice(0, pos) + tag + body.slice(pos));
              }} />
            </div>
            <textarea id="tpl-body" ref={bodyRef} className="mono" rows={14} value={body} onChange={(e) => setBody(e.target.value)} />
            <div className="hint">{'Variables: {{firstName}}, {{ data.plan }}, {{ name ?? "there" }}, {{{rawHtml}}}, {{unsubscribeUrl}}.'}</div>
          </div>
          <OpenTrackingField body={body} type={type} value={trackOpens} onChange={setTrackOpens} what="template" />
          <div className="field">
            <label htmlFor="tpl-sample">Sample data for the preview (JSON)</label>
            <textarea id="tpl-sample" className="mono" rows={5} value={sample} onChange={(e) => setSample(e.target.value)} />
          </div>
          <button type="submit" className="primary" disabled={act.busy}>{template ? "Save" : "Create template"}</button>
        </form>
        <Preview subject={subject} body={body} sample={sample} />
      </div>
      {template && usage.data && (
        <section className="card" aria-labelledby="usage-h">
          <h2 id="usage-h">Used by</h2>
          {usage.data.campaigns.length + usage.data.workflows.length === 0 ? <Empty>Not used by any campaign or workflow.</Empty> : (
            <ul>
              {usage.data.campaigns.map((c) => <li key={c.id}>Campaign <Link href={`/campaigns/${c.id}`}>{c.name}</Link> <Badge>{c.status}</Badge></li>)}
              {usage.data.workflows.map((w) => <li key={w.id + w.stepId}>Workflow <Link href={`/workflows/${w.id}`}>{w.name}</Link></li>)}
            </ul>
          )}
        </section>
      )}
    </Page>
  );
}
