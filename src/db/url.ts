/** A database URL fit for logs and output: the password replaced by "***". */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = "***";
    return u.toString();
  } catch {
    return "postgres://***";
  }
}
