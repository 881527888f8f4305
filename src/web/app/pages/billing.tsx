import { useState } from "react";
import { api } from "../api";
import { useProject, useSession } from "../session";
import { ErrorBanner, Loading, Notice, Page, Progress, TextInput, useAction, useAsync, Table } from "../ui";

const CATEGORIES = ["transactional", "campaigns", "workflows", "inbound"] as const;
type Cat = (typeof CATEGORIES)[number];

export function BillingPage() {
  const project = useProject();
  const s = useSession();
  const base = `/users/@me/projects/${project.id}`;
  const consumption = useAsync(() => api<any>(`${base}/billing-consumption`, { noProject: true }), [project.id]);
  const limits = useAsync(() => api<Record<Cat, number | null>>(`${base}/billing-limits`, { noProject: true }), [project.id]);
  const security = useAsync(() => api<any>(`${base}/security`, { noProject: true }), [project.id]);
  const invoices = useAsync(() => api<any>(`${base}/billing-invoices`, { noProject: true }).catch(() => []), [project.id]);
  const [draft, setDraft] = useState<Record<string, string>>({});
  const [saved, setSaved] = useState(false);
  const act = useAction();
  const canAdmin = project.role === "OWNER" || project.role === "ADMIN";
  const value = (c: Cat) => draft[c] ?? (limits.data?.[c] == null ? "" : String(limits.data[c]));
  return (
    <Page title="Billing and limits">
      <ErrorBanner error={act.error} />
      <section className="card" aria-labelledby="cons-h">
        <h2 id="cons-h">This month's consumption</h2>
        <ErrorBanner error={consumption.error} />
        {!consumption.data ? !consumption.error && <Loading /> : (
          <>
            <p className="hint">{new Date(consumption.data.periodStart).toLocaleDateString()} – {new Date(consumption.data.periodEnd).toLocaleDateString()}</p>
            <Table head={["Category", "Used", "Limit", "Of limit"]}>
                {CATEGORIES.map((c) => {
                  const x = consumption.data[c] ?? { used: 0, limit: null, percentage: null };
                  return (
                    <tr key={c}>
                      <td>{c}</td>
                      <td>{x.used}</td>
                      <td>{x.limit ?? "unlimited"}</td>
                      <td>{x.limit != null ? <Progress value={Math.min(100, x.percentage ?? 0)} label={`${c} usage`} /> : "—"}</td>
                    </tr>
                  );
                })}
              </Table>
          </>
        )}
      </section>
      <section className="card" aria-labelledby="lim-h">
        <h2 id="lim-h">Monthly caps</h2>
        <p className="hint">A send that would pass its category's cap is refused (402) and sends nothing. Leave empty for unlimited.</p>
        <ErrorBanner error={limits.error} />
        {saved && <Notice kind="ok">Limits saved.</Notice>}
        <form className="row" onSubmit={(e) => { e.preventDefault(); setSaved(false); void act.run(async () => {
          const body = Object.fromEntries(CATEGORIES.map((c) => [c, value(c) === "" ? null : Number(value(c))]));
          await api(`${base}/billing-limits`, { method: "PUT", body, noProject: true });
          setDraft({});
          limits.reload();
          consumption.reload();
          setSaved(true);
        }); }}>
          {CATEGORIES.map((c) => (
            <TextInput key={c} label={c} type="number" min={0} value={value(c)} placeholder="unlimited" onChange={(v) => setDraft({ ...draft, [c]: v })} />
          ))}
          <button type="submit" className="primary" disabled={!canAdmin || act.busy}>Save limits</button>
        </form>
      </section>
      <section className="card" aria-labelledby="plan-h">
        <h2 id="plan-h">Subscription</h2>
        {s.config.features?.billing === false && <p className="hint">Billing is off on this server (no payment provider configured).</p>}
        <div className="row">
          <button type="button" onClick={() => void act.run(async () => {
            const r = await api<{ url: string }>(`${base}/checkout`, { method: "POST", noProject: true });
            location.href = r.url;
          })}>Upgrade</button>
          <button type="button" onClick={() => void act.run(async () => {
            const r = await api<{ url: string }>(`${base}/billing-portal`, { method: "POST", noProject: true });
            location.href = r.url;
          })}>Billing portal</button>
        </div>
        {Array.isArray(invoices.data?.data ?? invoices.data) && (invoices.data?.data ?? invoices.data).length > 0 && (
          <ul>{(invoices.data?.data ?? invoices.data).map((i: any) => <li key={i.id}>{i.number ?? i.id}: {i.amount ?? i.total} {i.currency} {i.status}</li>)}</ul>
        )}
      </section>
      <section className="card" aria-labelledby="sec-h">
        <h2 id="sec-h">Sending reputation (last 30 days)</h2>
        <ErrorBanner error={security.error} />
        {security.data && (
          <p>
            Bounce rate <strong>{security.data.bounceRate}%</strong> · complaint rate <strong>{security.data.complaintRate}%</strong> · {security.data.sends} sends.
            {" "}A project above 10% bounces or 0.5% complaints (with at least 100 sends) is disabled.
          </p>
        )}
      </section>
    </Page>
  );
}
