import { useState } from "react";
import { useLocation } from "wouter";
import { api } from "../api";
import { useProject, useSession, type Project } from "../session";
import { Badge, CopyButton, ErrorBanner, Loading, Notice, Page, Select, TextInput, useAction, useAsync } from "../ui";

export function NewProjectPage({ first }: { first?: boolean }) {
  const s = useSession();
  const [name, setName] = useState("");
  const { error, busy, run } = useAction();
  const [, navigate] = useLocation();
  const form = (
    <form
      className="card narrow"
      onSubmit={(e) => {
        e.preventDefault();
        void run(async () => {
          const p = await api<Project>("/users/@me/projects", { body: { name }, noProject: true });
          await s.reload();
          s.selectProject(p.id);
          navigate("/settings");
        });
      }}
    >
      {first && <p>Welcome! Create your first project: it holds your contacts, templates, domains and API keys.</p>}
      <ErrorBanner error={error} />
      <TextInput label="Project name" value={name} onChange={setName} required />
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
        <table>
          <thead>
            <tr>
              <th scope="col">Email</th>
              <th scope="col">Role</th>
              <th scope="col">
                <span className="sr-only">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
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
          </tbody>
        </table>
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
