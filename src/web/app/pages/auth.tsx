import { useEffect, useState } from "react";
import { Link, useLocation } from "wouter";
import { api } from "../api";
import { useSession } from "../session";
import { ErrorBanner, Notice, TextInput, useAction } from "../ui";

const token = () => new URLSearchParams(location.search).get("token") ?? "";

export function AuthPage({ mode }: { mode: "login" | "signup" | "forgot" }) {
  const s = useSession();
  const [email, setEmail] = useState("");
  const [password, setPassword] = useState("");
  const [sent, setSent] = useState(false);
  const { error, busy, run } = useAction();
  const [, navigate] = useLocation();
  const title = mode === "login" ? "Log in" : mode === "signup" ? "Create your account" : "Reset your password";
  useEffect(() => {
    document.title = `${title} · mailsvc`;
  }, [title]);

  const submit = (e: React.FormEvent) => {
    e.preventDefault();
    void run(async () => {
      if (mode === "forgot") {
        await api("/auth/request-password-reset", { body: { email }, noProject: true });
        setSent(true);
        return;
      }
      await api(mode === "login" ? "/auth/login" : "/auth/signup", { body: { email, password }, noProject: true });
      await s.signedIn();
      navigate("/");
    });
  };

  return (
    <main className="auth" id="main">
      <form onSubmit={submit} aria-labelledby="auth-title" className="card">
        <div className="brand">mailsvc</div>
        <h1 id="auth-title">{title}</h1>
        <ErrorBanner error={error} />
        {sent && <Notice kind="ok">If an account exists for {email}, a reset link is on its way.</Notice>}
        <TextInput label="Email" type="email" name="email" autoComplete="email" value={email} onChange={setEmail} required />
        {mode !== "forgot" && (
          <TextInput
            label="Password"
            type="password"
            name="password"
            autoComplete={mode === "signup" ? "new-password" : "current-password"}
            value={password}
            onChange={setPassword}
            required
            hint={mode === "signup" ? "At least 8 characters." : undefined}
          />
        )}
        <button type="submit" className="primary" disabled={busy}>
          {mode === "login" ? "Log in" : mode === "signup" ? "Sign up" : "Send reset link"}
        </button>
        <p className="muted">
          {mode === "login" ? (
            <>
              No account? <Link href="/signup">Sign up</Link> · <Link href="/forgot">Forgot password?</Link>
            </>
          ) : (
            <>
              Have an account? <Link href="/login">Log in</Link>
            </>
          )}
        </p>
        {mode === "signup" && s.config.features && s.config.features.signups === false && (
          <Notice kind="warn">Sign-ups are disabled on this server; ask an administrator for an account.</Notice>
        )}
      </form>
    </main>
  );
}

export function ResetPasswordPage() {
  const [password, setPassword] = useState("");
  const [done, setDone] = useState(false);
  const { error, busy, run } = useAction();
  return (
    <main className="auth" id="main">
      <form
        className="card"
        aria-labelledby="reset-title"
        onSubmit={(e) => {
          e.preventDefault();
          void run(async () => {
            await api("/auth/reset-password", { body: { token: token(), password }, noProject: true });
            setDone(true);
          });
        }}
      >
        <h1 id="reset-title">Choose a new password</h1>
        <ErrorBanner error={error} />
        {done ? (
          <Notice kind="ok">
            Your password is changed. <a href="/#/login">Log in</a>
          </Notice>
        ) : (
          <>
            <TextInput label="New password" type="password" autoComplete="new-password" value={password} onChange={setPassword} required hint="At least 8 characters." />
            <button type="submit" className="primary" disabled={busy}>
              Set password
            </button>
          </>
        )}
      </form>
    </main>
  );
}

export function VerifyEmailPage() {
  const [state, setState] = useState<"working" | "done" | "failed">("working");
  const [msg, setMsg] = useState("");
  useEffect(() => {
    api("/auth/verify-email", { body: { token: token() }, noProject: true }).then(
      () => setState("done"),
      (e) => {
        setState("failed");
        setMsg(e.message);
      },
    );
  }, []);
  return (
    <main className="auth" id="main">
      <div className="card">
        <h1>Email verification</h1>
        {state === "working" && <p>Verifying…</p>}
        {state === "done" && <Notice kind="ok">Your email address is verified.</Notice>}
        {state === "failed" && <div className="banner error" role="alert">{msg}</div>}
        <a href="/#/">Go to the dashboard</a>
      </div>
    </main>
  );
}
