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
  secret: string;
  webhookSecret?: string;
  disabled: boolean;
  disabledReason: string | null;
  tracking: "MARKETING_ONLY" | "ENABLED" | "DISABLED";
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
const PROJECT_KEY = "mailsvc.project";

export function SessionProvider({ children }: { children: ReactNode }) {
  const [user, setUser] = useState<User | null | undefined>(undefined);
  const [projects, setProjects] = useState<Project[]>([]);
  const [projectId, setProjectId] = useState<string | null>(() => localStorage.getItem(PROJECT_KEY));
  const [config, setConfig] = useState<SessionState["config"]>({});

  const load = useCallback(async () => {
    try {
      const me = await api<User>("/users/@me", { noProject: true });
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
    return onUnauthorized(() => setUser(null));
  }, [load]);

  const project = projects.find((p) => p.id === projectId) ?? projects[0] ?? null;
  // Set synchronously during render so children's first requests carry the right header.
  setApiProject(project?.id ?? null);

  const selectProject = (id: string) => {
    localStorage.setItem(PROJECT_KEY, id);
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
