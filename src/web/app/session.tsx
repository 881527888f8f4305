import { createContext, useCallback, useContext, useEffect, useState, type ReactNode } from "react";
import { api, onUnauthorized, setApiProject } from "./api";

export interface User {
  id: string;
  email: string;
  emailVerified?: boolean;
}

export interface Project {
  id: string;
  name: string;
  public: string;
  /** null for a MEMBER (read-only role). */
  secret: string | null;
  webhookSecret?: string;
  disabled: boolean;
  disabledReason: string | null;
  tracking: "MARKETING_ONLY" | "ENABLED" | "DISABLED";
  /** Mail is captured (shown under Emails), never sent; any sender domain works. */
  sandbox?: boolean;
  doubleOptIn?: { enabled: boolean; templateId: string | null; redirectUrl: string | null };
  /** Shown in the footer of MARKETING mail; null = none. */
  postalAddress?: string | null;
  role?: "OWNER" | "ADMIN" | "MEMBER";
  createdAt: string;
  updatedAt: string;
}

interface SessionState {
  /** undefined while loading, null when logged out. */
  user: User | null | undefined;
  projects: Project[];
  project: Project | null;
  selectProject(id: string): void;
  reload(): Promise<void>;
  signedIn(): Promise<void>;
  logout(): Promise<void>;
  config: { version?: string; features?: Record<string, boolean> };
}

const Ctx = createContext<SessionState | null>(null);
// The last project each user selected, per user: another account logging in on the same browser does not
// inherit it (and the old shared key is still honoured when it names one of this user's projects).
const LEGACY_PROJECT_KEY = "mailsvc.project";
const projectKey = (userId: string) => `mailsvc.project.${userId}`;

function stored(key: string): string | null {
  try {
    return localStorage.getItem(key);
  } catch {
    return null;
  }
}

/**
 * The project shown when the user has not picked one yet (or the remembered one is gone): the first project the
 * user created, i.e. the oldest one they own, else the oldest they are a member of. That is their main project,
 * and it stays put: `GET /users/@me/projects` lists the newest first, so `projects[0]` changed every time a
 * project was created or the user was invited to one.
 */
export function defaultProject(projects: Project[]): Project | null {
  const oldestFirst = [...projects].sort((a, b) => a.createdAt.localeCompare(b.createdAt) || a.id.localeCompare(b.id));
  return oldestFirst.find((p) => p.role === undefined || p.role === "OWNER") ?? oldestFirst[0] ?? null;
}

export function SessionProvider({ children }: { children: ReactNode }) {
  const [user, setUser] = useState<User | null | undefined>(undefined);
  const [projects, setProjects] = useState<Project[]>([]);
  // The project picked in this tab; the remembered one (localStorage) until then.
  const [projectId, setProjectId] = useState<string | null>(null);
  const [config, setConfig] = useState<SessionState["config"]>({});

  const load = useCallback(async () => {
    try {
      // GET /auth/session answers 200 with null when logged out: no 401 in the console for a visitor.
      const me = (await api<{ user: User | null }>("/auth/session", { noProject: true })).user;
      if (!me) {
        setUser(null);
        setProjects([]);
        return;
      }
      const list = await api<Project[]>("/users/@me/projects", { noProject: true });
      setProjects(list);
      setUser(me);
    } catch {
      setUser(null);
      setProjects([]);
    }
  }, []);

  useEffect(() => {
    void load();
    api("/config").then(setConfig, () => {});
    return onUnauthorized(() => {
      setUser(null);
      setProjectId(null);
    });
  }, [load]);

  const byId = (id: string | null) => (id ? projects.find((p) => p.id === id) : undefined);
  const project =
    byId(projectId) ?? (user ? byId(stored(projectKey(user.id))) ?? byId(stored(LEGACY_PROJECT_KEY)) : undefined) ?? defaultProject(projects);
  // Set synchronously during render so children's first requests carry the right header.
  setApiProject(project?.id ?? null);

  const selectProject = (id: string) => {
    try {
      if (user) localStorage.setItem(projectKey(user.id), id);
    } catch {
      // Storage full or disabled: the choice lasts for this tab only.
    }
    setApiProject(id);
    setProjectId(id);
  };

  const value: SessionState = {
    user,
    projects,
    project,
    selectProject,
    reload: load,
    signedIn: load,
    async logout() {
      await api("/auth/logout", { noProject: true }).catch(() => {});
      setUser(null);
      setProjects([]);
      setProjectId(null);
    },
    config,
  };
  return <Ctx.Provider value={value}>{children}</Ctx.Provider>;
}

export function useSession(): SessionState {
  const s = useContext(Ctx);
  if (!s) throw new Error("useSession outside SessionProvider");
  return s;
}

/** The selected project (pages under the shell always have one). */
export function useProject(): Project {
  const p = useSession().project;
  if (!p) throw new Error("no project selected");
  return p;
}
