// Account emails (verification, password reset) through the delivery engine, from
// MAILSVC_SYSTEM_FROM. They belong to no project: source SYSTEM, no contact, no tracking.
import type { AppContext } from "../../context";
import { normalizeEmail, parseMailbox } from "../../net/email-address";
import { insertContent, insertEmails } from "../../mail/outbox/enqueue";
import { wakeOutbox } from "../../mail/outbox/outbox";

export async function sendAccountEmail(ctx: AppContext, msg: { to: string; subject: string; html: string; text: string }): Promise<void> {
  const from = ctx.config.systemFrom ? parseMailbox(ctx.config.systemFrom) : null;
  if (!from) throw new Error(`MAILSVC_SYSTEM_FROM is not a valid address: "${ctx.config.systemFrom ?? ""}"`);
  const now = ctx.clock.now();
  await ctx.db.transaction().execute(async (trx) => {
    const contentId = await insertContent(trx, now, {
      projectId: null,
      subject: msg.subject.replace(/[\r\n]+/g, " "),
      html: msg.html,
      text: msg.text,
      fromEmail: from.email,
      fromName: from.name,
      type: "TRANSACTIONAL",
    });
    await insertEmails(trx, now, ctx.config.hostname, [{ projectId: null, contentId, contactId: null, toEmail: normalizeEmail(msg.to), sourceType: "SYSTEM" }]);
  });
  wakeOutbox(ctx);
}
