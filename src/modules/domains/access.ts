import type { AppContext } from "../../context";
import { countSessionRequest, membership, type AuthInfo } from "../../http/auth";
import { notFound } from "../../http/errors";

/**
 * Domain endpoints accept the project's secret key or a session of one of its members
 * (docs/api.md "Conventions": another project's resources answer 404). Anything else is 404, so other tenants' ids do not leak.
 */
export async function assertProjectAccess(
  ctx: AppContext,
  auth: AuthInfo,
  projectId: string,
  what = "Project",
  /** The response headers: a member's session is counted against the project's rate limit here. */
  headers?: Record<string, unknown>,
): Promise<void> {
  if (auth.via !== "session") {
    if (auth.projectId !== projectId) throw notFound(what);
    return;
  }
  if (!auth.userId || !(await membership(ctx, projectId, auth.userId))) throw notFound(what);
  if (headers) countSessionRequest(ctx, auth, projectId, headers);
}
