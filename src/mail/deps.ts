// The engine's calls into other parts of the service (rendering, sender domains, contacts and
// events, the feedback loop), gathered in one place.
export { planDecoration, subscriptionUrls } from "./tracking";
export { renderHtml, renderSubject, renderText } from "./render";
export { bounceDomainFor } from "./address";
export { getSigningKey, type SigningKey } from "./signing-keys";
export { setSubscribed } from "../audience/contacts";
export { recordEvent, notifyEvents, newEventId, type RecordedEvent } from "../audience/events";
export { insertEventRaw } from "../audience/raw";
