// The one HTTP client of the dashboard: same-origin fetch with the session cookie, the chosen
// project in X-Project-Id, and the API's error envelope (or bare { error }) turned into ApiError.

export interface FieldError {
  field: string;
  message: string;
  code?: string;
}

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly fieldErrors: FieldError[] = [],
    readonly suggestion?: string,
  ) {
    super(message);
  }
  /** One readable line for a banner. */
  get display(): string {
    const fields = this.fieldErrors.map((e) => `${e.field}: ${e.message}`).join("; ");
    return [this.message, fields].filter(Boolean).join(" — ");
  }
}

let currentProject: string | null = null;
export const setApiProject = (id: string | null) => {
  currentProject = id;
};

type Listener = () => void;
const unauthorizedListeners = new Set<Listener>();
/** Called when a session request answers 401 (the cookie expired): the app goes to the login page. */
export const onUnauthorized = (l: Listener) => {
  unauthorizedListeners.add(l);
  return () => {
    unauthorizedListeners.delete(l);
  };
};

export interface RequestOptions {
  method?: string;
  body?: unknown;
  form?: FormData;
  query?: Record<string, string | number | boolean | undefined | null>;
  /** Leave out X-Project-Id (account-level endpoints). */
  noProject?: boolean;
}

export function qs(query: RequestOptions["query"]): string {
  if (!query) return "";
  const p = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) if (v !== undefined && v !== null && v !== "") p.set(k, String(v));
  const s = p.toString();
  return s ? `?${s}` : "";
}

export async function api<T = any>(path: string, opts: RequestOptions = {}): Promise<T> {
  const headers: Record<string, string> = { accept: "application/json" };
  if (currentProject && !opts.noProject) headers["x-project-id"] = currentProject;
  let body: BodyInit | undefined;
  if (opts.form) body = opts.form;
  else if (opts.body !== undefined) {
    body = JSON.stringify(opts.body);
    headers["content-type"] = "application/json";
  }
  let res: Response;
  try {
    res = await fetch(path + qs(opts.query), {
      method: opts.method ?? (body !== undefined ? "POST" : "GET"),
      headers,
      body,
      credentials: "same-origin",
    });
  } catch {
    throw new ApiError(0, "NETWORK", "The server cannot be reached. Check your connection and try again.");
  }
  const text = await res.text();
  let parsed: any = null;
  try {
    parsed = text ? JSON.parse(text) : null;
  } catch {
    parsed = text;
  }
  if (!res.ok) {
    const e = parsed && typeof parsed === "object" ? parsed.error : undefined;
    let err: ApiError;
    if (e && typeof e === "object") err = new ApiError(res.status, e.code ?? "ERROR", e.message ?? `Request failed (${res.status})`, e.errors ?? [], e.suggestion);
    else if (typeof e === "string") err = new ApiError(res.status, "BAD_REQUEST", e);
    else err = new ApiError(res.status, "ERROR", `Request failed (${res.status})`);
    if (res.status === 401 && err.code === "UNAUTHORIZED") unauthorizedListeners.forEach((l) => l());
    throw err;
  }
  return parsed as T;
}

/** Unwraps `{ success, data }` answers (POST /campaigns and friends) and leaves bare resources alone. */
export function unwrap<T>(x: any): T {
  return x && typeof x === "object" && "success" in x && "data" in x ? (x.data as T) : (x as T);
}

/** Lists come bare or as `{ data }`. */
export function listOf<T>(x: any): T[] {
  if (Array.isArray(x)) return x;
  if (x && Array.isArray(x.data)) return x.data;
  return [];
}

export interface CursorPage<T> {
  data: T[];
  cursor: string | null;
  hasMore: boolean;
  total: number;
}

export interface OffsetPage<T> {
  data: T[];
  page: number;
  pageSize: number;
  total: number;
  totalPages: number;
}

/** Polls a queued job (`GET path`) until it completes or fails, reporting progress. */
export async function pollJob(path: string, onProgress: (job: any) => void, intervalMs = 300): Promise<any> {
  for (;;) {
    const job = await api(path);
    onProgress(job);
    if (job.state === "completed" || job.state === "failed") return job;
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

export const fmtDate = (s: string | null | undefined) => (s ? new Date(s).toLocaleString() : "—");
