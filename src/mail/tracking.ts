// Seam between the delivery engine (issue 5) and the feedback loop (issue 6), which owns this file.
// The engine calls these while building each message; until issue 6 lands they change nothing.
import type { AppContext } from "../context";

export type MailType = "TRANSACTIONAL" | "MARKETING" | "HEADLESS";

export interface DecorateInput {
  projectId: string;
  emailId: string;
  contactId: string | null;
  toEmail: string;
  type: MailType;
  /** The rendered HTML body. */
  html: string;
  /** Whether the body source already used {{unsubscribeUrl}} (then no footer is appended). */
  bodyUsesUnsubscribeUrl: boolean;
}

export interface Decorated {
  html: string;
  /** Extra headers (List-Unsubscribe, List-Unsubscribe-Post). */
  headers: Record<string, string>;
}

/** Adds open pixel, click-tracking links, unsubscribe footer and List-Unsubscribe headers as the project's settings say. */
export async function decorateMessage(_ctx: AppContext, input: DecorateInput): Promise<Decorated> {
  return { html: input.html, headers: {} };
}

/** The reserved template variables of a recipient: signed links to the subscription pages. */
export function subscriptionUrls(_ctx: AppContext, _projectId: string, _contactId: string | null, _email: string) {
  return { unsubscribeUrl: "", subscribeUrl: "", manageUrl: "" };
}
