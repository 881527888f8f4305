import { consumeQuota } from "../../../billing/quota";
import { parseData } from "../../../../audience/data-rules";
import { insertContent, insertEmails } from "../../../../mail/outbox/enqueue";
import { suppressedAmong } from "../../../../mail/outbox/suppressions";
import type { SendEmailConfig } from "../configs";
import { getTemplateRow } from "../store";
import { fail, next } from "../types";
import type { StepRunner } from "./env";

/**
 * SEND_EMAIL: writes the email row through the outbox's enqueue, in the transaction that completes
 * the step (a crash can neither lose it nor send it twice). MARKETING and HEADLESS templates skip
 * an unsubscribed contact and go on.
 */
export const runSendEmail: StepRunner = async (env) => {
  const { templateId, trackOpens: stepTrackOpens } = env.step.config as unknown as SendEmailConfig;
  const projectId = env.workflow.projectId;
  const memoKey = `tpl:${projectId}:${templateId}`;
  let tpl = env.memo.get(memoKey) as Awaited<ReturnType<typeof getTemplateRow>>;
  if (!tpl) env.memo.set(memoKey, (tpl = await getTemplateRow(env.trx, projectId, templateId)));
  if (!tpl) return fail(`Template ${templateId} does not exist`);
  const contact = env.contact;
  if (tpl.type !== "TRANSACTIONAL" && contact.subscribed !== 1) {
    return next(undefined, { skipped: "contact is unsubscribed", templateId }, true);
  }
  const suppressed = (await suppressedAmong(env.trx, projectId, [contact.email])).size > 0;
  if (!suppressed) {
    try {
      await consumeQuota(env.trx as never, env.ctx, projectId, "workflows", 1);
    } catch (e) {
      if ((e as { status?: number })?.status === 402) return fail("The project's monthly workflows email cap is reached", { billing: (e as { extra?: { details?: unknown } }).extra?.details ?? null });
      throw e;
    }
  }
  // The content (the template's sources) is shared by every email of this transaction's batch.
  const trackOpens = stepTrackOpens ?? (tpl.track_opens === null ? null : tpl.track_opens === 1);
  const contentKey = `content:${tpl.id}:${tpl.updated_at}:${trackOpens}`;
  let contentId = env.memo.get(contentKey) as string | undefined;
  if (!contentId) {
    contentId = await insertContent(env.trx, env.now, {
      projectId,
      subject: tpl.subject,
      html: tpl.body,
      fromEmail: tpl.from_email,
      fromName: tpl.from_name,
      replyTo: tpl.reply_to,
      type: tpl.type as "TRANSACTIONAL" | "MARKETING" | "HEADLESS",
      trackOpens,
    });
    env.memo.set(contentKey, contentId);
  }
  const vars = { ...parseData(contact.data), email: contact.email, id: contact.id, event: env.event?.data ?? {}, workflow: env.context };
  const [emailId] = await insertEmails(env.trx, env.now, env.ctx.config.hostname, [
    {
      projectId,
      contentId,
      contactId: contact.id,
      toEmail: contact.email,
      vars,
      sourceType: "WORKFLOW",
      templateId: tpl.id,
      workflowExecutionId: env.execution.id,
      status: suppressed ? "SUPPRESSED" : "PENDING",
    },
  ]);
  env.effects.wakeOutbox = true;
  return next(undefined, { emailId, templateId: tpl.id, ...(suppressed ? { suppressed: true } : {}) });
};
