// The first hour: the getting-started checklist (Overview) and the server's configuration warnings
// with their fix (Overview and Domains), both from GET /projects/:id/setup-state.
import { Link } from "wouter";
import { api } from "../api";
import { useProject } from "../session";
import { useAsync } from "../ui";

export interface ConfigWarning {
  code: string;
  message: string;
  fix: string;
}

export interface SetupState {
  hasDomain?: boolean;
  hasVerifiedDomain?: boolean;
  hasContacts?: boolean;
  hasSentEmail?: boolean;
  campaigns?: number;
  templates?: number;
  completed?: boolean;
  warnings?: ConfigWarning[];
  [k: string]: unknown;
}

export function useSetupState() {
  const project = useProject();
  return useAsync(() => api<SetupState>(`/projects/${project.id}/setup-state`, { noProject: true }), [project.id]);
}

const WARNING_TITLES: Record<string, string> = {
  HOSTNAME_NOT_FQDN: "The server's name is not a full domain name",
  PUBLIC_URL_LOOPBACK: "Links in your emails point to this machine only",
};

/** The installation's problems that cost every message spam points, each with what to change. */
export function ConfigWarnings({ warnings }: { warnings: ConfigWarning[] | undefined }) {
  if (!warnings?.length) return null;
  return (
    <section className="card warn-card" aria-labelledby="cfg-warn-h">
      <h2 id="cfg-warn-h">Server configuration needs attention</h2>
      <p className="hint">These settings are made where the server is started (environment variables or command-line flags), not in this dashboard. Until they are fixed, spam filters score every email this server sends.</p>
      <ul className="warnings">
        {warnings.map((w) => (
          <li key={w.code} data-code={w.code}>
            <strong>{WARNING_TITLES[w.code] ?? w.code}</strong>
            <p>{w.message}</p>
            <p>
              <span className="fix-label">How to fix it:</span> {w.fix}
            </p>
          </li>
        ))}
      </ul>
    </section>
  );
}

interface Step {
  key: string;
  done: boolean;
  title: string;
  why: string;
  href: string;
  link: string;
  /** A second place that helps (the API keys for a first send). */
  also?: { href: string; link: string };
}

/** Domain, first email, first contact, first campaign: each done or a link to the page that does it. */
export function Checklist({ state }: { state: SetupState }) {
  const steps: Step[] = [
    {
      key: "domain",
      done: !!state.hasVerifiedDomain,
      title: "Verify a sending domain",
      why: state.hasDomain
        ? "Your domain is added: publish its DNS records, then press “Verify now”."
        : "Emails are sent from an address at your domain; its DNS records prove it is yours.",
      href: "/domains",
      link: "Go to Domains",
    },
    {
      key: "contact",
      done: !!state.hasContacts,
      title: "Add your first contact",
      why: "Add someone by hand, import a CSV, or track an event from your app.",
      href: "/contacts",
      link: "Go to Contacts",
    },
    {
      key: "email",
      done: !!state.hasSentEmail,
      title: "Send your first email",
      why: "Write a template, then send it from your app with the secret key (in Settings) or send a campaign test.",
      href: "/templates",
      link: "Go to Templates",
      also: { href: "/settings", link: "API keys" },
    },
    {
      key: "campaign",
      done: Number(state.campaigns ?? 0) > 0,
      title: "Create your first campaign",
      why: "A campaign sends one email to all your contacts, a segment, or contacts matching conditions.",
      href: "/campaigns",
      link: "Go to Campaigns",
    },
  ];
  const left = steps.filter((s) => !s.done).length;
  if (left === 0) return null;
  return (
    <section className="card checklist" aria-labelledby="setup-h">
      <h2 id="setup-h">Get started</h2>
      <p className="hint">
        {steps.length - left} of {steps.length} done.
      </p>
      <ol aria-label="Getting started">
        {steps.map((s) => (
          <li key={s.key} className={s.done ? "done" : undefined} data-step={s.key}>
            <span className="check-mark" aria-hidden="true">{s.done ? "✓" : "○"}</span>
            <div>
              <strong>{s.title}</strong>
              {s.done ? <span className="sr-only"> (done)</span> : null}
              {!s.done && <div className="hint">{s.why}</div>}
              {!s.done && (
                <div className="row">
                  <Link href={s.href}>{s.link}</Link>
                  {s.also && <Link href={s.also.href}>{s.also.link}</Link>}
                </div>
              )}
            </div>
          </li>
        ))}
      </ol>
    </section>
  );
}
