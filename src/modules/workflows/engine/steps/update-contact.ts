import { applyDataRules, parseData } from "../../../../audience/data-rules";
import { flipEventName } from "../../../../audience/contacts";
import { recordEvent } from "../../../../audience/events";
import type { UpdateContactConfig } from "../configs";
import { writeContact } from "../store";
import { next } from "../types";
import type { StepRunner } from "./env";

/** UPDATE_CONTACT: the contact data rules, and a subscription flip that records its contact event. */
export const runUpdateContact: StepRunner = async (env) => {
  const c = env.step.config as unknown as UpdateContactConfig;
  const contact = env.contact;
  const rules = applyDataRules(parseData(contact.data), c.updates ?? null);
  const action = c.subscriptionAction ?? "none";
  const before = contact.subscribed === 1;
  const after = action === "subscribe" ? true : action === "unsubscribe" ? false : before;
  const flip = flipEventName(before, after);
  if (rules.changed || flip) {
    const set = { data: JSON.stringify(rules.stored), subscribed: after ? 1 : 0 };
    await writeContact(env.trx, contact.id, set, env.now);
    Object.assign(contact, set, { updated_at: env.now });
    env.effects.contacts.push({ projectId: env.workflow.projectId, contactId: contact.id });
  }
  if (flip) {
    const data = { source: "workflow", workflowId: env.workflow.id, executionId: env.execution.id };
    const eventId = await recordEvent(env.trx, env.ctx, { projectId: env.workflow.projectId, contactId: contact.id, name: flip, data });
    env.effects.events.push({ projectId: env.workflow.projectId, contactId: contact.id, eventId, name: flip, data });
  }
  return next(undefined, { updated: Object.keys(rules.provided), subscribed: after, ...(flip ? { event: flip } : {}) });
};
