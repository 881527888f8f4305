// One email of the message log, and (when the project kept it: sandbox mail always, other mail with
// MAILSVC_KEEP_RAW) the message itself: HTML in a sandboxed iframe (no scripts; links open in a new
// tab, so its tracked links, pixel and unsubscribe links reach this server as a reader's would), the
// text part, the headers, the attachments and the DKIM result.
import { useMemo, useState } from "react";
import { Link } from "wouter";
import { api, ApiError, fmtDate } from "../api";
import { useProject } from "../session";
import { Badge, ErrorBanner, Loading, Notice, Page, useAsync, useAction } from "../ui";

interface DkimCheck {
  result: "pass" | "fail" | "none";
  domain: string | null;
  selector: string | null;
  algorithm: string | null;
  domainVerified: boolean | null;
  detail: string;
}

interface MessageView {
  headers: { name: string; value: string }[];
  subject: string | null;
  html: string | null;
  text: string | null;
  attachments: { filename: string | null; contentType: string; size: number; contentId: string | null; disposition: string | null }[];
  size: number;
  dkim: DkimCheck[];
}

/** The message's HTML with every link opening in a new tab (the frame itself never navigates). */
function previewHtml(html: string): string {
  const doc = new DOMParser().parseFromString(html, "text/html");
  for (const a of Array.from(doc.querySelectorAll("a[href], area[href]"))) {
    a.setAttribute("target", "_blank");
    a.setAttribute("rel", "noopener noreferrer");
  }
  return "<!doctype html>" + doc.documentElement.outerHTML;
}

const kb = (n: number) => (n < 1024 ? `${n} B` : `${(n / 1024).toFixed(1)} KB`);

function DkimResult({ checks }: { checks: DkimCheck[] }) {
  return (
    <ul className="dkim" aria-label="DKIM">
      {checks.map((c, i) => (
        <li key={i}>
          <Badge tone={c.result === "pass" ? "ok" : c.result === "fail" ? "failed" : "pending"}>{c.result === "none" ? "unsigned" : `DKIM ${c.result}`}</Badge>{" "}
          {c.domain && (
            <span>
              d={c.domain} s={c.selector} ({c.algorithm}){c.domainVerified === false ? " — the domain is not verified in DNS yet: receivers could not check this signature until its DKIM record is published" : ""}.{" "}
            </span>
          )}
          <span className="hint">{c.detail}</span>
        </li>
      ))}
    </ul>
  );
}

export function EmailPage({ id }: { id: string }) {
  const project = useProject();
  const email = useAsync(() => api<any>(`/emails/${id}`), [id]);
  const message = useAsync(
    () =>
      api<{ message: MessageView }>(`/emails/${id}/message`).catch((e) => {
        if (e instanceof ApiError && e.status === 404) return null;
        throw e;
      }),
    [id],
  );
  const [tab, setTab] = useState<"html" | "text" | "headers">("html");
  const download = useAction();
  const m = message.data?.message;
  const html = useMemo(() => (m?.html ? previewHtml(m.html) : null), [m?.html]);
  const e = email.data;
  return (
    <Page
      title={e?.subject ? `Email: ${e.subject}` : "Email"}
      actions={
        <>
          <Link href="/emails">All emails</Link>
          {m && (
            <button
              type="button"
              disabled={download.busy}
              onClick={() =>
                void download.run(async () => {
                  const res = await fetch(`/emails/${id}/raw`, { headers: { "x-project-id": project.id }, credentials: "same-origin" });
                  if (!res.ok) throw new ApiError(res.status, "NOT_FOUND", "The message is no longer kept");
                  const url = URL.createObjectURL(await res.blob());
                  const a = document.createElement("a");
                  a.href = url;
                  a.download = `${id}.eml`;
                  a.click();
                  setTimeout(() => URL.revokeObjectURL(url), 1000);
                })
              }
            >
              Download .eml
            </button>
          )}
          <button type="button" onClick={() => { email.reload(); message.reload(); }}>
            Refresh
          </button>
        </>
      }
    >
      <ErrorBanner error={email.error ?? message.error ?? download.error} />
      {!e ? (
        email.loading ? <Loading /> : null
      ) : (
        <>
          {e.sandbox && (
            <Notice>
              Captured by the sandbox: this message was built, signed and tracked exactly as for real, then kept here instead of being sent. Nothing left this server.
            </Notice>
          )}
          <dl className="facts">
            <dt>Status</dt>
            <dd>
              <Badge>{e.status}</Badge>
            </dd>
            <dt>To</dt>
            <dd>{e.toName ? `${e.toName} <${e.to}>` : e.to}</dd>
            <dt>From</dt>
            <dd>{e.fromName ? `${e.fromName} <${e.from}>` : e.from}</dd>
            <dt>Source</dt>
            <dd>{e.sourceType}{e.type && e.type !== e.sourceType ? ` · ${e.type}` : ""}</dd>
            <dt>Attempts</dt>
            <dd>{e.attempts}</dd>
            <dt>Last reply</dt>
            <dd>{e.lastReply ?? "—"}</dd>
            <dt>Created</dt>
            <dd>{fmtDate(e.createdAt)}</dd>
            {e.deliveredAt && (
              <>
                <dt>Delivered</dt>
                <dd>{fmtDate(e.deliveredAt)}</dd>
              </>
            )}
            {e.openedAt && (
              <>
                <dt>Opened</dt>
                <dd>{fmtDate(e.openedAt)}</dd>
              </>
            )}
            {e.clickedAt && (
              <>
                <dt>Clicked</dt>
                <dd>{fmtDate(e.clickedAt)}</dd>
              </>
            )}
          </dl>
        </>
      )}
      {message.loading && !message.data ? (
        <Loading what="Loading the message" />
      ) : message.data === null ? (
        <p className="hint">The message itself is not kept for this email: only sandbox mail is, and other mail while the server runs with MAILSVC_KEEP_RAW.</p>
      ) : m ? (
        <section className="card" aria-labelledby="message-h">
          <h2 id="message-h">Message</h2>
          <DkimResult checks={m.dkim} />
          <div className="row" role="tablist" aria-label="Message parts">
            {(["html", "text", "headers"] as const).map((t) => (
              <button key={t} type="button" role="tab" aria-selected={tab === t} className={tab === t ? "primary" : ""} onClick={() => setTab(t)}>
                {t === "html" ? "HTML" : t === "text" ? "Text" : "Headers"}
              </button>
            ))}
          </div>
          {tab === "html" &&
            (html ? (
              <>
                <p className="hint">Rendered without scripts. Its links, open pixel and unsubscribe links are live: opening or clicking here is recorded like a reader's.</p>
                <iframe title="Email HTML" className="email-frame" sandbox="allow-popups allow-popups-to-escape-sandbox" srcDoc={html} />
              </>
            ) : (
              <p className="hint">This message has no HTML part.</p>
            ))}
          {tab === "text" && <pre className="email-text" aria-label="Text part">{m.text ?? "(no text part)"}</pre>}
          {tab === "headers" && (
            <div className="scroll-x">
              <table aria-label="Headers">
                <tbody>
                  {m.headers.map((h, i) => (
                    <tr key={i}>
                      <th scope="row">{h.name}</th>
                      <td className="mono">{h.value}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          )}
          <h3>Attachments</h3>
          {m.attachments.length === 0 ? (
            <p className="hint">None.</p>
          ) : (
            <ul aria-label="Attachments">
              {m.attachments.map((a, i) => (
                <li key={i}>
                  {a.filename ?? "(unnamed)"} · {a.contentType} · {kb(a.size)}
                  {a.disposition === "inline" ? " · inline" : ""}
                </li>
              ))}
            </ul>
          )}
          <p className="hint">{kb(m.size)} as handed to SMTP.</p>
        </section>
      ) : null}
    </Page>
  );
}
