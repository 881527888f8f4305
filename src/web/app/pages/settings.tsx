import { useState } from "react";
import { useLocation } from "wouter";
import { api } from "../api";
import { useProject, useSession, type Project } from "../session";
import { Badge, Checkbox, CopyButton, ErrorBanner, Loading, Notice, Page, Select, Table, TextInput, useAction, useAsync } from "../ui";

export function NewProjectPage({ first }: { first?: boolean }) {
  const s = useSession();
  const [name, setName] = useState("");
  const [sandbox, setSandbox] = useState(false);
  const { error, busy, run } = useAction();
  const [, navigate] = useLocation();
  const form = (
    <form
      className="card narrow"
      onSubmit={(e) => {
        e.preventDefault();
        void run(async () => {
          const p = await api<Project>("/users/@me/projects", { body: { name, sandbox }, noProject: true });
          await s.reload();
          s.selectProject(p.id);
          // A new project opens on Overview: its getting-started checklist is the next step.
          navigate("/");
        });
      }}
    >
      {first && <p>Welcome! Create your first project: it holds your contacts, templates, domains and API keys.</p>}
      <ErrorBanner error={error} />
      <TextInput label="Project name" value={name} onChange={setName} required />
      <Checkbox label="Sandbox: try everything without DNS" checked={sandbox} onChange={setSandbox} />
      <p className="hint">
        A sandbox sends from any domain and captures every email instead of sending it: read them under Emails, with simulated recipients (bounce@, softbounce@, complaint@, open@, click@ any domain). Turn it off in
        Settings once your domain is verified.
      </p>
      <button className="primary" type="submit" disabled={busy}>
        Create project
      </button>
      {first && (
        <button type="button" className="link" onClick={() => s.logout()}>
          Log out
        </button>
      )}
    </form>
  );
  if (first)
    return (
      <main className="auth" id="main">
        <div>
          <h1>Create a project</h1>
          {form}
        </div>
      </main>
    );
  return <Page title="Create a project">{form}</Page>;
}

const TRACKING = [
  { value: "MARKETING_ONLY", label: "Marketing only (recommended)" },
  { value: "ENABLED", label: "Enabled for every email" },
  { value: "DISABLED", label: "Disabled" },
] as const;

function Secret({ label, value }: { label: string; value: string }) {
  const [shown, setShown] = useState(false);
  return (
    <div className="key-row">
      <span className="key-label">{label}</span>
      <code aria-label={label}>{shown ? value : value.slice(0, 7) + "•".repeat(20)}</code>
      <button type="button" className="small" onClick={() => setShown(!shown)} aria-pressed={shown}>
        {shown ? "Hide" : "Reveal"}
      </button>
      <CopyButton text={value} />
    </div>
  );
}

export function SettingsPage() {
  const s = useSession();
  const project = useProject();
  const [name, setName] = useState(project.name);
  const [tracking, setTracking] = useState<Project["tracking"]>(project.tracking);
  const [postalAddress, setPostalAddress] = useState(project.postalAddress ?? "");
  const [saved, setSaved] = useState(false);
  const save = useAction();
  const rotate = useAction();
  const danger = useAction();
  const [, navigate] = useLocation();
  const canAdmin = project.role === "OWNER" || project.role === "ADMIN";

  return (
    <Page title="Project settings">
      <section className="card" aria-labelledby="general-h">
        <h2 id="general-h">General</h2>
        <ErrorBanner error={save.error} />
        {saved && <Notice kind="ok">Settings saved.</Notice>}
        <form
          onSubmit={(e) => {
            e.preventDefault();
            setSaved(false);
            void save.run(async () => {
              await api(`/users/@me/projects/${project.id}`, { method: "PATCH", body: { name, tracking, postalAddress: postalAddress.trim() || null }, noProject: true });
              await s.reload();
              setSaved(true);
            });
          }}
        >
          <TextInput label="Name" value={name} onChange={setName} required />
          <Select label="Open and click tracking" value={tracking} onChange={setTracking} options={[...TRACKING]} />
          <p className="hint">A tracking pixel and rewritten links cost transactional mail spam-filter points; "Marketing only" tracks campaigns and marketing templates.</p>
          <TextInput label="Postal address" value={postalAddress} onChange={setPostalAddress} hint="Shown in the footer of marketing emails (many laws ask for one), in the HTML and the text part." />
          <button type="submit" className="primary" disabled={save.busy || !canAdmin}>
            Save
          </button>
          {!canAdmin && <span className="hint"> Only owners and admins change settings.</span>}
        </form>
      </section>

      <SandboxSetting project={project} canAdmin={canAdmin} onSaved={() => s.reload()} />

      <section className="card" aria-labelledby="keys-h">
        <h2 id="keys-h">API keys</h2>
        <p className="hint">
          The public key (<code>pk_</code>) only tracks events (<code>POST /v1/track</code>) and may ship in a browser. The secret key (<code>sk_</code>) does everything else: keep it on your server.
        </p>
        <Secret label="Public key" value={project.public} />
        {project.secret && <Secret label="Secret key" value={project.secret} />}
        {project.webhookSecret && <Secret label="Webhook signing secret" value={project.webhookSecret} />}
        <ErrorBanner error={rotate.error} />
        <button
          type="button"
          className="danger"
          disabled={rotate.busy || !canAdmin}
          onClick={() => {
            if (!confirm("Rotate both keys? The current keys stop working immediately.")) return;
            void rotate.run(async () => {
              await api(`/users/@me/projects/${project.id}/regenerate-keys`, { method: "POST", noProject: true });
              await s.reload();
            });
          }}
        >
          Rotate keys
        </button>
      </section>

      <Members projectId={project.id} myRole={project.role} myId={s.user?.id} />

      <DoubleOptInSettings canAdmin={canAdmin} />

      <section className="card" aria-labelledby="danger-h">
        <h2 id="danger-h">Danger zone</h2>
        <ErrorBanner error={danger.error} />
        <div className="row">
          <button
            type="button"
            className="danger"
            disabled={project.role !== "OWNER"}
            onClick={() => {
              if (prompt(`Type the project name "${project.name}" to delete every contact, event, email, campaign, segment, workflow, template and upload of it.`) !== project.name) return;
              void danger.run(() => api(`/users/@me/projects/${project.id}/reset`, { method: "POST", noProject: true }));
            }}
          >
            Reset project data
          </button>
          <button
            type="button"
            className="danger"
            disabled={project.role !== "OWNER"}
            onClick={() => {
              if (prompt(`Type the project name "${project.name}" to delete the project.`) !== project.name) return;
              void danger.run(async () => {
                await api(`/users/@me/projects/${project.id}`, { method: "DELETE", noProject: true });
                await s.reload();
                navigate("/");
              });
            }}
          >
            Delete project
          </button>
        </div>
      </section>
    </Page>
  );
}

/** The sandbox switch, with what turning it off or on changes and whether a domain is verified yet. */
function SandboxSetting({ project, canAdmin, onSaved }: { project: Project; canAdmin: boolean; onSaved: () => Promise<unknown> }) {
  const domains = useAsync(() => api<{ domain: string; verified: boolean }[]>(`/domains/project/${project.id}`, { noProject: true }), [project.id]);
  const act = useAction();
  const [forced, setForced] = useState(false);
  const list = domains.data ?? [];
  const verified = list.filter((d) => d.verified).map((d) => d.domain);
  const on = !!project.sandbox;
  return (
    <section className="card" aria-labelledby="sandbox-h">
      <h2 id="sandbox-h">Sandbox</h2>
      <ErrorBanner error={act.error} />
      <p>
        The sandbox is <strong>{on ? "on" : "off"}</strong>.{" "}
        {on
          ? "Emails from this project are built, signed and tracked as for real, then captured here instead of being sent; any sender domain works and nothing counts toward reputation or billing."
          : "Emails from this project are sent to their recipients' mail servers from verified domains only."}
      </p>
      {forced && on && <Notice kind="warn">This server runs with MAILSVC_SANDBOX=true: every project is a sandbox until it is restarted without it.</Notice>}
      {on ? (
        <>
          <p className="hint">
            Turning it off: from then on every email is really sent, sending from a domain that is not verified answers 403, and sends count toward billing limits and sending reputation. Captured emails stay readable.
          </p>
          {!domains.loading && (
            <Notice kind={verified.length ? "ok" : "warn"}>
              {verified.length ? `Verified sender domain${verified.length > 1 ? "s" : ""}: ${verified.join(", ")}.` : "No sender domain is verified yet: with the sandbox off, every send would be refused until one is."}
            </Notice>
          )}
        </>
      ) : (
        <p className="hint">Turning it on: emails are captured instead of sent (read them under Emails), from any sender domain; simulated recipients bounce@, softbounce@, complaint@, open@ and click@ (any domain) act like real ones.</p>
      )}
      <button
        type="button"
        className={on ? "primary" : ""}
        disabled={act.busy || !canAdmin}
        onClick={() =>
          void act.run(async () => {
            const p = await api<Project>(`/users/@me/projects/${project.id}`, { method: "PATCH", body: { sandbox: !on }, noProject: true });
            setForced(on && !!p.sandbox);
            await onSaved();
          })
        }
      >
        {on ? "Turn the sandbox off" : "Turn the sandbox on"}
      </button>
    </section>
  );
}

interface Member {
  userId: string;
  email: string;
  role: "OWNER" | "ADMIN" | "MEMBER";
  createdAt: string;
}

function Members({ projectId, myRole, myId }: { projectId: string; myRole?: string; myId?: string }) {
  const list = useAsync(() => api<Member[]>(`/projects/${projectId}/members`, { noProject: true }), [projectId]);
  const [email, setEmail] = useState("");
  const [role, setRole] = useState<Member["role"]>("MEMBER");
  const act = useAction();
  const canAdmin = myRole === "OWNER" || myRole === "ADMIN";
  return (
    <section className="card" aria-labelledby="members-h">
      <h2 id="members-h">Members</h2>
      <ErrorBanner error={list.error ?? act.error} />
      {list.loading && !list.data ? (
        <Loading />
      ) : (
        <Table head={["Email", "Role", <span className="sr-only">Actions</span>]}>
            {(list.data ?? []).map((m) => (
              <tr key={m.userId}>
                <td>{m.email}</td>
                <td>
                  {canAdmin && m.userId !== myId ? (
                    <Select
                      label={`Role of ${m.email}`}
                      hideLabel
                      value={m.role}
                      options={["OWNER", "ADMIN", "MEMBER"]}
                      onChange={(r) => void act.run(async () => {
                        await api(`/projects/${projectId}/members/${m.userId}`, { method: "PATCH", body: { role: r }, noProject: true });
                        list.reload();
                      })}
                    />
                  ) : (
                    <Badge>{m.role}</Badge>
                  )}
                </td>
                <td>
                  {canAdmin && m.userId !== myId && (
                    <button
                      type="button"
                      className="small danger"
                      onClick={() => {
                        if (!confirm(`Remove ${m.email} from the project?`)) return;
                        void act.run(async () => {
                          await api(`/projects/${projectId}/members/${m.userId}`, { method: "DELETE", noProject: true });
                          list.reload();
                        });
                      }}
                    >
                      Remove
                    </button>
                  )}
                </td>
              </tr>
            ))}
        </Table>
      )}
      {canAdmin && (
        <form
          className="row"
          onSubmit={(e) => {
            e.preventDefault();
            void act.run(async () => {
              await api(`/projects/${projectId}/members`, { body: { email, role }, noProject: true });
              setEmail("");
              list.reload();
            });
          }}
        >
          <TextInput label="Invite by email (they must have signed up)" type="email" value={email} onChange={setEmail} required />
          <Select label="Role" value={role} onChange={setRole} options={["MEMBER", "ADMIN", "OWNER"]} />
          <button type="submit" disabled={act.busy}>
            Add member
          </button>
        </form>
      )}
    </section>
  );
}

/** Double opt-in: public-key subscribes wait for a confirmation link (the email's template is chosen here). */
function DoubleOptInSettings({ canAdmin }: { canAdmin: boolean }) {
  const s = useSession();
  const project = useProject();
  const current = project.doubleOptIn ?? { enabled: false, templateId: null, redirectUrl: null };
  const [enabled, setEnabled] = useState(current.enabled);
  const [templateId, setTemplateId] = useState(current.templateId ?? "");
  const [redirectUrl, setRedirectUrl] = useState(current.redirectUrl ?? "");
  const [saved, setSaved] = useState(false);
  const templates = useAsync(() => api<any>("/templates", { query: { pageSize: 100, sort: "name", dir: "asc" } }), []);
  const save = useAction();
  const options = [{ value: "", label: "Plain default email" }, ...((templates.data?.data ?? []) as { id: string; name: string }[]).map((t) => ({ value: t.id, label: t.name }))];
  return (
    <section className="card" aria-labelledby="doi-h">
      <h2 id="doi-h">Double opt-in</h2>
      <p className="hint">
        When on, a contact who subscribes with the public key (<code>/v1/track</code>) stays unsubscribed and pending until they open the link of a confirmation email (one per 10 minutes, the link
        works once for 7 days). Writes with the secret key are trusted. The template gets the link as <code>{"{{confirmUrl}}"}</code>.
      </p>
      <ErrorBanner error={save.error ?? templates.error} />
      {saved && <Notice kind="ok">Double opt-in saved.</Notice>}
      <form
        onSubmit={(e) => {
          e.preventDefault();
          setSaved(false);
          void save.run(async () => {
            await api(`/users/@me/projects/${project.id}`, { method: "PATCH", body: { doubleOptIn: { enabled, templateId: templateId || null, redirectUrl: redirectUrl.trim() || null } }, noProject: true });
            await s.reload();
            setSaved(true);
          });
        }}
      >
        <Checkbox label="Require confirmation of public subscribes" checked={enabled} onChange={setEnabled} />
        <Select label="Confirmation email template" value={templateId} onChange={setTemplateId} options={options} />
        <TextInput label="After confirming, redirect to (optional)" type="url" value={redirectUrl} onChange={setRedirectUrl} placeholder="https://example.com/welcome" hint="Empty: a confirmation page served by mailsvc." />
        <button type="submit" className="primary" disabled={save.busy || !canAdmin}>
          Save double opt-in
        </button>
      </form>
    </section>
  );
}
