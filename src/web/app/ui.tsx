// Small shared building blocks (form fields, banners, tables, data loading). Styling is in styles.css.
import { useCallback, useEffect, useId, useRef, useState, type ReactNode } from "react";
import { Link } from "wouter";
import { api, ApiError } from "./api";

export function useAsync<T>(fn: () => Promise<T>, deps: unknown[]): { data: T | undefined; error: ApiError | null; loading: boolean; reload: () => void; setData: (d: T) => void } {
  const [data, setData] = useState<T | undefined>(undefined);
  const [error, setError] = useState<ApiError | null>(null);
  const [loading, setLoading] = useState(true);
  const [n, setN] = useState(0);
  useEffect(() => {
    let live = true;
    setLoading(true);
    fn().then(
      (d) => {
        if (!live) return;
        setData(d);
        setError(null);
        setLoading(false);
      },
      (e) => {
        if (!live) return;
        setError(toApiError(e));
        setLoading(false);
      },
    );
    return () => {
      live = false;
    };
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [...deps, n]);
  const reload = useCallback(() => setN((x) => x + 1), []);
  return { data, error, loading, reload, setData };
}

export function toApiError(e: unknown): ApiError {
  if (e instanceof ApiError) return e;
  return new ApiError(0, "ERROR", e instanceof Error ? e.message : String(e));
}

/** Runs an action, keeps its error for an ErrorBanner and a busy flag for the button. */
export function useAction() {
  const [error, setError] = useState<ApiError | null>(null);
  const [busy, setBusy] = useState(false);
  const run = useCallback(async <T,>(fn: () => Promise<T>): Promise<T | undefined> => {
    setBusy(true);
    setError(null);
    try {
      return await fn();
    } catch (e) {
      setError(toApiError(e));
      return undefined;
    } finally {
      setBusy(false);
    }
  }, []);
  return { error, busy, run, setError };
}

export function ErrorBanner({ error }: { error: ApiError | null | undefined }) {
  if (!error) return null;
  const fix = fixFor(error);
  return (
    <div className="banner error" role="alert">
      <strong>{error.message}</strong>
      {error.fieldErrors.length > 0 && (
        <ul>
          {error.fieldErrors.map((f, i) => (
            <li key={i}>
              <code>{f.field.replace(/^config\./, "")}</code>: {f.message}
            </li>
          ))}
        </ul>
      )}
      {fix ? (
        <div>
          {fix.text} <Link href={fix.href}>{fix.link}</Link>
        </div>
      ) : (
        error.suggestion && !API_PATH.test(error.suggestion) && <div className="muted">{error.suggestion}</div>
      )}
    </div>
  );
}

/** A suggestion written for API clients ("… with POST /domains …"): the dashboard says it in its own words. */
const API_PATH = /\b(GET|POST|PUT|PATCH|DELETE) \//;

export interface ErrorFix {
  text: string;
  href: string;
  link: string;
}

/** Errors whose fix is on another page of the dashboard: what to do, and a link there. */
export function fixFor(error: ApiError): ErrorFix | null {
  const m = error.message;
  if (/sender domain .* is not verified/i.test(m)) return { text: "Add the domain and verify its DNS records first:", href: "/domains", link: "open Domains" };
  if (error.code === "BILLING_LIMIT_EXCEEDED") return { text: "The project's monthly limit is reached; raise it or wait for the next month:", href: "/billing", link: "open Billing" };
  if (error.code === "PROJECT_DISABLED") return { text: "See the project's plan and limits:", href: "/billing", link: "open Billing" };
  if (error.status === 404 && /^template\b/i.test(m)) return { text: "Choose an existing template:", href: "/templates", link: "open Templates" };
  return null;
}

export function Notice({ children, kind = "info" }: { children: ReactNode; kind?: "info" | "ok" | "warn" }) {
  return (
    <div className={`banner ${kind}`} role="status">
      {children}
    </div>
  );
}

export function Field({ label, children, hint, className }: { label: string; children: (id: string) => ReactNode; hint?: ReactNode; className?: string }) {
  const id = useId();
  return (
    <div className={className ? `field ${className}` : "field"}>
      <label htmlFor={id}>{label}</label>
      {children(id)}
      {hint && <div className="hint">{hint}</div>}
    </div>
  );
}

export function TextInput(props: { label: string; value: string; onChange: (v: string) => void; type?: string; required?: boolean; placeholder?: string; hint?: ReactNode; autoComplete?: string; name?: string; min?: number }) {
  return (
    <Field label={props.label} hint={props.hint}>
      {(id) => (
        <input
          id={id}
          name={props.name}
          type={props.type ?? "text"}
          value={props.value}
          required={props.required}
          placeholder={props.placeholder}
          min={props.min}
          autoComplete={props.autoComplete}
          onChange={(e) => props.onChange(e.target.value)}
        />
      )}
    </Field>
  );
}

export function Select<T extends string>(props: { label: string; value: T; onChange: (v: T) => void; options: (T | { value: T; label: string })[]; hideLabel?: boolean }) {
  const id = useId();
  return (
    <div className="field">
      <label htmlFor={id} className={props.hideLabel ? "sr-only" : undefined}>
        {props.label}
      </label>
      <select id={id} value={props.value} onChange={(e) => props.onChange(e.target.value as T)}>
        {props.options.map((o) => {
          const v = typeof o === "string" ? o : o.value;
          const l = typeof o === "string" ? o : o.label;
          return (
            <option key={v} value={v}>
              {l}
            </option>
          );
        })}
      </select>
    </div>
  );
}

export function Checkbox({ label, checked, onChange }: { label: string; checked: boolean; onChange: (v: boolean) => void }) {
  const id = useId();
  return (
    <div className="check">
      <input id={id} type="checkbox" checked={checked} onChange={(e) => onChange(e.target.checked)} />
      <label htmlFor={id}>{label}</label>
    </div>
  );
}

export function Page({ title, actions, children }: { title: string; actions?: ReactNode; children: ReactNode }) {
  useEffect(() => {
    document.title = `${title} · mailsvc`;
  }, [title]);
  return (
    <section className="page" aria-labelledby="page-title">
      <header className="page-head">
        <h1 id="page-title">{title}</h1>
        {actions && <div className="actions">{actions}</div>}
      </header>
      {children}
    </section>
  );
}

export function Loading({ what = "Loading" }: { what?: string }) {
  return (
    <p className="muted" aria-busy="true">
      {what}…
    </p>
  );
}

export function Progress({ value, label }: { value: number; label: string }) {
  return (
    <div className="progress-wrap">
      <progress max={100} value={value} aria-label={label} />
      <span>{Math.round(value)}%</span>
    </div>
  );
}

export function Badge({ children, tone }: { children: ReactNode; tone?: string }) {
  return <span className={`badge ${tone ?? String(children).toLowerCase()}`}>{children}</span>;
}

export function CopyButton({ text, label = "Copy" }: { text: string; label?: string }) {
  const [done, setDone] = useState(false);
  return (
    <button
      type="button"
      className="small"
      onClick={async () => {
        try {
          await navigator.clipboard.writeText(text);
        } catch {
          // Clipboard blocked (plain http, permissions): select-and-copy fallback.
          const ta = document.createElement("textarea");
          ta.value = text;
          document.body.appendChild(ta);
          ta.select();
          document.execCommand("copy");
          ta.remove();
        }
        setDone(true);
        setTimeout(() => setDone(false), 1500);
      }}
    >
      {done ? "Copied" : label}
    </button>
  );
}

/** A native <dialog> used as a modal (focus trapped and Escape handled by the browser). */
export function Modal({ open, title, onClose, children }: { open: boolean; title: string; onClose: () => void; children: ReactNode }) {
  const ref = useRef<HTMLDialogElement>(null);
  useEffect(() => {
    const d = ref.current;
    if (!d) return;
    if (open && !d.open) d.showModal();
    if (!open && d.open) d.close();
  }, [open]);
  return (
    <dialog ref={ref} onClose={onClose} aria-labelledby="modal-title">
      <h2 id="modal-title">{title}</h2>
      {open && children}
    </dialog>
  );
}

export function Empty({ children }: { children: ReactNode }) {
  return <p className="empty">{children}</p>;
}

/** Polls `fn` every `ms` while `active`. */
export function usePoll(fn: () => void, ms: number, active: boolean) {
  const ref = useRef(fn);
  ref.current = fn;
  useEffect(() => {
    if (!active) return;
    const t = setInterval(() => ref.current(), ms);
    return () => clearInterval(t);
  }, [ms, active]);
}

export function TextArea(props: { label: string; value: string; onChange: (v: string) => void; rows?: number; mono?: boolean; placeholder?: string; hint?: ReactNode; invalid?: boolean; required?: boolean; className?: string }) {
  return (
    <Field label={props.label} hint={props.hint} className={props.className}>
      {(id) => (
        <textarea
          id={id}
          className={props.mono ? "mono" : undefined}
          rows={props.rows ?? 4}
          value={props.value}
          placeholder={props.placeholder}
          required={props.required}
          aria-invalid={props.invalid || undefined}
          onChange={(e) => props.onChange(e.target.value)}
        />
      )}
    </Field>
  );
}

export function NumberInput(props: { label: string; value: number | ""; onChange: (v: number | "") => void; min?: number; step?: number; hint?: ReactNode; required?: boolean }) {
  return (
    <Field label={props.label} hint={props.hint}>
      {(id) => (
        <input
          id={id}
          type="number"
          inputMode="decimal"
          min={props.min}
          step={props.step ?? "any"}
          required={props.required}
          value={props.value}
          onChange={(e) => props.onChange(e.target.value === "" ? "" : Number(e.target.value))}
        />
      )}
    </Field>
  );
}

/**
 * A data table: its header cells and body rows, scrolling sideways inside its own box on a narrow screen.
 * className "stack": on a phone each row is a card of labelled cells instead (cells carry data-label).
 */
export function Table({ head, children, label, caption, className }: { head: ReactNode[]; children: ReactNode; label?: string; caption?: string; className?: string }) {
  return (
    <div className="table-wrap" role={label ? "region" : undefined} aria-label={label} tabIndex={label ? 0 : undefined}>
      <table className={className}>
        {caption && <caption className="sr-only">{caption}</caption>}
        <thead>
          <tr>
            {head.map((h, i) => (
              <th scope="col" key={i}>
                {h}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>{children}</tbody>
      </table>
    </div>
  );
}

/** The one pager: Previous / Next with an optional position ("Page 2 of 5", "1–50 of 120"). */
export function Pager({ label = "Pages", info, hasPrev, hasNext, onPrev, onNext }: { label?: string; info?: ReactNode; hasPrev: boolean; hasNext: boolean; onPrev: () => void; onNext: () => void }) {
  return (
    <nav className="row pager" aria-label={label}>
      {info !== undefined && (
        <span className="muted" aria-live="polite">
          {info}
        </span>
      )}
      <button type="button" disabled={!hasPrev} onClick={onPrev}>
        Previous
      </button>
      <button type="button" disabled={!hasNext} onClick={onNext}>
        Next
      </button>
    </nav>
  );
}

/** The pager of a numbered list (`page` of `totalPages`); nothing when everything fits on one page. */
export function OffsetPager({ page, totalPages, onPage }: { page: number; totalPages: number | undefined; onPage: (p: number) => void }) {
  if (!totalPages || totalPages <= 1) return null;
  return <Pager info={`Page ${page} of ${totalPages}`} hasPrev={page > 1} hasNext={page < totalPages} onPrev={() => onPage(page - 1)} onNext={() => onPage(page + 1)} />;
}

/** Cursor paging state: the cursor of the shown page, the page number, and moves for a Pager. */
export function useCursorPages() {
  const [cursors, setCursors] = useState<(string | null)[]>([null]);
  return {
    cursor: cursors[cursors.length - 1] ?? null,
    page: cursors.length,
    reset: () => setCursors([null]),
    prev: () => setCursors((c) => (c.length > 1 ? c.slice(0, -1) : c)),
    next: (cursor: string | null | undefined) => cursor && setCursors((c) => [...c, cursor]),
  };
}

/** "Delete": asks to confirm ("Delete campaign Spring sale?"), DELETEs `path`, then `done` (back to the list); errors land in `act`. */
export function DeleteButton({ what, name, path, act, done }: { what: string; name: string; path: string; act: ReturnType<typeof useAction>; done: () => void }) {
  return (
    <button type="button" className="danger" onClick={() => {
      if (!confirm(`Delete ${what} ${name}?`)) return;
      void act.run(async () => {
        await api(path, { method: "DELETE" });
        done();
      });
    }}>Delete</button>
  );
}

/** A list page's search form: the search box, the page's own filters (children), and Search. */
export function SearchForm({ value, onChange, onSearch, children }: { value: string; onChange: (v: string) => void; onSearch: () => void; children?: ReactNode }) {
  return (
    <form className="row filters" role="search" onSubmit={(e) => { e.preventDefault(); onSearch(); }}>
      <TextInput label="Search" type="search" value={value} onChange={onChange} />
      {children}
      <button type="submit">Search</button>
    </form>
  );
}
