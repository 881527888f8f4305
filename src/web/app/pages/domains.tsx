import { useState } from "react";
import { api } from "../api";
import { ConfigWarnings, useSetupState } from "../components/setup";
import { useProject } from "../session";
import { Badge, CopyButton, Empty, ErrorBanner, Loading, Page, TextInput, useAction, useAsync, Table } from "../ui";

interface DomainRecord {
  type: string;
  name: string;
  value: string;
  priority?: number;
  purpose: string;
  required: boolean;
  status: string;
  detail?: string;
}
interface Domain {
  id: string;
  domain: string;
  verified: boolean;
  status: string;
  records: DomainRecord[];
  lastCheckedAt?: string | null;
}

export function DomainsPage() {
  const project = useProject();
  const list = useAsync(() => api<Domain[]>(`/domains/project/${project.id}`), [project.id]);
  const [domain, setDomain] = useState("");
  const act = useAction();
  const setup = useSetupState();
  return (
    <Page title="Domains">
      <ConfigWarnings warnings={setup.data?.warnings} />
      <p className="hint">Emails are sent from addresses of verified domains. Add the DNS records below at your DNS provider, then verify. Only the DKIM record is required; the others improve deliverability.</p>
      <form
        className="row card"
        onSubmit={(e) => {
          e.preventDefault();
          void act.run(async () => {
            await api("/domains", { body: { projectId: project.id, domain } });
            setDomain("");
            list.reload();
          });
        }}
      >
        <TextInput label="Domain" value={domain} onChange={setDomain} placeholder="example.com" required />
        <button type="submit" className="primary" disabled={act.busy}>
          Add domain
        </button>
      </form>
      <ErrorBanner error={list.error ?? act.error} />
      {list.loading && !list.data && <Loading />}
      {list.data?.length === 0 && <Empty>No domains yet.</Empty>}
      {list.data?.map((d) => (
        <DomainCard key={d.id} d={d} onChange={list.reload} />
      ))}
    </Page>
  );
}

function DomainCard({ d, onChange }: { d: Domain; onChange: () => void }) {
  const act = useAction();
  return (
    <section className="card" aria-label={`Domain ${d.domain}`}>
      <div className="row spread">
        <h2>
          {d.domain} <Badge>{d.status}</Badge>
        </h2>
        <div className="row">
          <button type="button" disabled={act.busy} onClick={() => void act.run(async () => {
            await api(`/domains/${d.id}/verify`);
            onChange();
          })}>
            {act.busy ? "Checking DNS…" : "Verify now"}
          </button>
          <button type="button" className="danger" onClick={() => {
            if (!confirm(`Remove ${d.domain}? Templates and campaigns sending from it stop working.`)) return;
            void act.run(async () => {
              await api(`/domains/${d.id}`, { method: "DELETE" });
              onChange();
            });
          }}>
            Remove
          </button>
        </div>
      </div>
      <ErrorBanner error={act.error} />
        <Table head={["Purpose", "Type", "Name", "Value", "Status"]}>
            {d.records.map((r) => (
              <tr key={r.purpose + r.name}>
                <td>
                  {r.purpose.toUpperCase()} {r.required ? <Badge tone="required">required</Badge> : <span className="hint">recommended</span>}
                </td>
                <td>{r.type}</td>
                <td>
                  <code className="wrap">{r.name}</code> <CopyButton text={r.name} label="Copy name" />
                </td>
                <td>
                  <code className="wrap clamp">{r.type === "MX" && r.priority !== undefined ? `${r.priority} ${r.value}` : r.value}</code> <CopyButton text={r.value} label="Copy value" />
                </td>
                <td>
                  <Badge>{r.status}</Badge>
                  {r.detail && <div className="hint">{r.detail}</div>}
                </td>
              </tr>
            ))}
          </Table>
    </section>
  );
}
