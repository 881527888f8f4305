import "@xyflow/react/dist/style.css";
import "./styles.css";
import { lazy, Suspense, useEffect, useState } from "react";
import { createRoot } from "react-dom/client";
import { Link, Redirect, Route, Router, Switch, useLocation } from "wouter";
import { useHashLocation } from "wouter/use-hash-location";
import { SessionProvider, useSession } from "./session";
import { Loading } from "./ui";
import { AuthPage, ResetPasswordPage, VerifyEmailPage } from "./pages/auth";
import { NewProjectPage, SettingsPage } from "./pages/settings";
import { DomainsPage } from "./pages/domains";
import { ContactPage, ContactsPage } from "./pages/contacts";
import { TemplateEditorPage, TemplatesPage } from "./pages/templates";
import { ActivityPage } from "./pages/activity";
import { EmailsPage } from "./pages/emails";
import { EmailPage } from "./pages/email";
const SuppressionsPage = lazy(() => import("./pages/suppressions").then((m) => ({ default: m.SuppressionsPage })));
const SegmentPage = lazy(() => import("./pages/segments").then((m) => ({ default: m.SegmentPage })));
const SegmentsPage = lazy(() => import("./pages/segments").then((m) => ({ default: m.SegmentsPage })));
const CampaignPage = lazy(() => import("./pages/campaigns").then((m) => ({ default: m.CampaignPage })));
const CampaignsPage = lazy(() => import("./pages/campaigns").then((m) => ({ default: m.CampaignsPage })));
const WorkflowPage = lazy(() => import("./pages/workflows").then((m) => ({ default: m.WorkflowPage })));
const WorkflowsPage = lazy(() => import("./pages/workflows").then((m) => ({ default: m.WorkflowsPage })));
const AnalyticsPage = lazy(() => import("./pages/analytics").then((m) => ({ default: m.AnalyticsPage })));
import { BillingPage } from "./pages/billing";
import { WebhooksPage } from "./pages/webhooks";

const NAV: [string, string][] = [
  ["/", "Overview"],
  ["/contacts", "Contacts"],
  ["/segments", "Segments"],
  ["/campaigns", "Campaigns"],
  ["/workflows", "Workflows"],
  ["/templates", "Templates"],
  ["/emails", "Emails"],
  ["/suppressions", "Suppressions"],
  ["/activity", "Activity"],
  ["/domains", "Domains"],
  ["/webhooks", "Webhooks"],
  ["/billing", "Billing"],
  ["/settings", "Settings"],
];

function Shell() {
  const s = useSession();
  const [loc, navigate] = useLocation();
  // On a phone the navigation is behind a menu button; it closes again when a page is chosen.
  const [menuOpen, setMenuOpen] = useState(false);
  useEffect(() => setMenuOpen(false), [loc]);
  if (s.user === undefined) return <Loading />;
  if (s.user === null) {
    return (
      <Switch>
        <Route path="/signup">{() => <AuthPage mode="signup" />}</Route>
        <Route path="/forgot">{() => <AuthPage mode="forgot" />}</Route>
        <Route path="/reset-password" component={ResetPasswordPage} />
        <Route path="/verify-email" component={VerifyEmailPage} />
        <Route>{() => <AuthPage mode="login" />}</Route>
      </Switch>
    );
  }
  if (!s.project) return <NewProjectPage first />;
  const active = (href: string) => (href === "/" ? loc === "/" : loc === href || loc.startsWith(href + "/"));
  return (
    <div className="shell">
      <a href="#main" className="skip">
        Skip to content
      </a>
      <aside className={`side${menuOpen ? " open" : ""}`}>
        <div className="side-top">
          <div className="brand">mailsvc</div>
          <button type="button" className="menu-button" aria-expanded={menuOpen} aria-controls="side-menu" onClick={() => setMenuOpen(!menuOpen)}>
            {menuOpen ? "Close" : "Menu"}
          </button>
        </div>
        <div className="side-menu" id="side-menu">
          <div className="field">
            <label htmlFor="project-switch">Project</label>
            <select
              id="project-switch"
              value={s.project.id}
              onChange={(e) => {
                if (e.target.value === "__new") navigate("/projects/new");
                else {
                  s.selectProject(e.target.value);
                  navigate("/");
                }
              }}
            >
              {s.projects.map((p) => (
                <option key={p.id} value={p.id}>
                  {p.name}
                </option>
              ))}
              <option value="__new">+ New project…</option>
            </select>
          </div>
          <nav aria-label="Main">
            <ul>
              {NAV.map(([href, label]) => (
                <li key={href}>
                  <Link href={href} aria-current={active(href) ? "page" : undefined}>
                    {label}
                  </Link>
                </li>
              ))}
            </ul>
          </nav>
          <div className="me">
            <span title={s.user.email}>{s.user.email}</span>
            <button type="button" className="link" onClick={() => s.logout().then(() => navigate("/"))}>
              Log out
            </button>
          </div>
        </div>
      </aside>
      <main id="main" tabIndex={-1}>
        {s.project.disabled && (
          <div className="banner error" role="alert">
            This project is disabled{s.project.disabledReason ? ` (${s.project.disabledReason})` : ""}: its API answers 403 until it is re-enabled.
          </div>
        )}
        {s.project.sandbox && (
          <div className="banner info sandbox-banner" role="status">
            Sandbox: this project's mail is captured, never sent (any sender domain works). Read it under <Link href="/emails">Emails</Link>; turn the sandbox off in{" "}
            <Link href="/settings">Settings</Link> once a domain is verified.
          </div>
        )}
        {/* key: a project switch remounts every page, so no page shows another project's data. */}
        <div key={s.project.id}>
          <Suspense fallback={<Loading />}>
          <Switch>
            <Route path="/" component={AnalyticsPage} />
            <Route path="/projects/new">{() => <NewProjectPage />}</Route>
            <Route path="/settings" component={SettingsPage} />
            <Route path="/domains" component={DomainsPage} />
            <Route path="/contacts" component={ContactsPage} />
            <Route path="/contacts/:id">{(p) => <ContactPage id={p.id} />}</Route>
            <Route path="/templates" component={TemplatesPage} />
            <Route path="/templates/:id">{(p) => <TemplateEditorPage id={p.id} />}</Route>
            <Route path="/segments" component={SegmentsPage} />
            <Route path="/segments/:id">{(p) => <SegmentPage id={p.id} />}</Route>
            <Route path="/campaigns" component={CampaignsPage} />
            <Route path="/campaigns/:id">{(p) => <CampaignPage id={p.id} />}</Route>
            <Route path="/workflows" component={WorkflowsPage} />
            <Route path="/workflows/:id">{(p) => <WorkflowPage id={p.id} />}</Route>
            <Route path="/activity" component={ActivityPage} />
            <Route path="/emails" component={EmailsPage} />
            <Route path="/emails/:id">{(p) => <EmailPage id={p.id} />}</Route>
            <Route path="/suppressions" component={SuppressionsPage} />
            <Route path="/billing" component={BillingPage} />
            <Route path="/webhooks" component={WebhooksPage} />
            <Route path="/reset-password" component={ResetPasswordPage} />
            <Route path="/verify-email" component={VerifyEmailPage} />
            <Route path="/login">{() => <Redirect to="/" />}</Route>
            <Route path="/signup">{() => <Redirect to="/" />}</Route>
            <Route>
              <p>Page not found.</p>
            </Route>
          </Switch>
          </Suspense>
        </div>
      </main>
    </div>
  );
}

createRoot(document.getElementById("root")!).render(
  <Router hook={useHashLocation}>
    <SessionProvider>
      <Shell />
    </SessionProvider>
  </Router>,
);
