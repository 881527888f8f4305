/**
 * Summary, tag, authentication and special error cases of every route, keyed by "METHOD /path"
 * (Elysia's path syntax). Routes files stay free of documentation; the OpenAPI generator
 * (openapi.ts) merges this with the routes' own TypeBox schemas. test/openapi checks that every
 * route the server registers has an entry here: add one when you add a route.
 */

/**
 * How a route authenticates (see http/auth.ts):
 * secret: secret key, or session cookie + X-Project-Id · track: also the public key · apiOnly: secret key only ·
 * session: dashboard session · optionalProject: secret key or session (project named in the path/body) ·
 * none: public · metrics: bearer MAILSVC_METRICS_TOKEN when configured · token: a signed link (tracking pages).
 */
export type DocAuth = "secret" | "track" | "apiOnly" | "session" | "optionalProject" | "none" | "metrics" | "token";

export interface RouteDoc {
  summary: string;
  tag: string;
  auth: DocAuth;
  description?: string;
  /** The spec's bare `{ error }` 400 case of this route. */
  bare400?: string;
  /** Success status when it is not 200. */
  status?: number;
  /** Response content type when it is not JSON. */
  produces?: string;
  /** A multipart upload read by the handler itself: the name of its file field. */
  fileField?: string;
}

export const TAGS: { name: string; description: string }[] = [
  { name: "System", description: "Health, configuration and the API description" },
  { name: "Auth", description: "Dashboard sign-up, login and account emails" },
  { name: "Projects", description: "Projects, keys, members and limits (dashboard session)" },
  { name: "Contacts", description: "Contacts, custom fields, import and bulk jobs" },
  { name: "Events", description: "Client events (/v1/track) and the event log" },
  { name: "Domains", description: "Sender domains and DKIM" },
  { name: "Templates", description: "Email templates" },
  { name: "Segments", description: "Dynamic and static segments, tracked membership" },
  { name: "Campaigns", description: "Campaigns: audience, schedule, send, stats" },
  { name: "Workflows", description: "Event-triggered workflows: steps, transitions, executions" },
  { name: "Dashboard", description: "The web dashboard served by the binary" },
  { name: "Sending", description: "Transactional sending and address verification" },
  { name: "Emails", description: "The per-message log" },
  { name: "Suppressions", description: "Addresses never attempted (hard bounces, complaints, manual entries): list, add, lift, import" },
  { name: "Activity", description: "Activity feed" },
  { name: "Tracking", description: "Open/click tracking and subscription pages reached from emails" },
  { name: "Analytics", description: "Time series, top campaigns and events (from rollups)" },
  { name: "Billing", description: "Monthly caps per category, consumption, optional Stripe subscription" },
  { name: "Uploads", description: "Images for template bodies, stored in the database and served publicly" },
  { name: "Webhooks", description: "Outbound webhooks: endpoints, deliveries (Standard Webhooks signatures)" },
  { name: "Inbound", description: "Callbacks from email and billing infrastructure" },
];

const d = (tag: string, auth: DocAuth, summary: string, extra: Partial<RouteDoc> = {}): RouteDoc => ({ tag, auth, summary, ...extra });

export const ROUTE_DOCS: Record<string, RouteDoc> = {
  // System
  "GET /config": d("System", "none", "Service version and enabled features"),
  "GET /health": d("System", "none", "Liveness and database check"),
  "GET /ready": d("System", "none", "Readiness for load balancers: 200 while the database answers and its migrations are this binary's (503 otherwise), with the instance id and engine"),
  "GET /metrics": d("System", "metrics", "Prometheus metrics", { produces: "text/plain" }),
  "GET /v1/key": d("System", "track", "Which project and key type the bearer key belongs to"),
  "GET /openapi.json": d("System", "none", "This OpenAPI 3.1 document"),
  "GET /docs": d("System", "none", "Interactive API reference (renders /openapi.json)", { produces: "text/html" }),
  "GET /docs/swagger-ui-bundle.js": d("System", "none", "API reference renderer script", { produces: "application/javascript" }),
  "GET /docs/swagger-ui.css": d("System", "none", "API reference renderer stylesheet", { produces: "text/css" }),

  // Auth and users
  "POST /auth/signup": d("Auth", "none", "Create a user account and start a session (cookie `token`)", { status: 201 }),
  "POST /auth/login": d("Auth", "none", "Log in and start a session (cookie `token`)"),
  "GET /auth/logout": d("Auth", "none", "End the session"),
  "GET /auth/session": d("Auth", "none", "The logged-in user, or `{ user: null }` without a valid session (never 401)"),
  "GET /auth/oauth-config": d("Auth", "none", "Configured OAuth providers"),
  "POST /auth/verify-email": d("Auth", "none", "Confirm an email address with the emailed token"),
  "POST /auth/request-verification": d("Auth", "session", "Send the verification email again"),
  "POST /auth/request-password-reset": d("Auth", "none", "Email a password reset link"),
  "POST /auth/reset-password": d("Auth", "none", "Set a new password with the emailed token"),
  "GET /users/@me": d("Auth", "session", "The logged-in user"),

  // Projects
  "GET /users/@me/projects": d("Projects", "session", "Projects of the logged-in user, with their role"),
  "POST /users/@me/projects": d("Projects", "session", "Create a project (the creator is OWNER); returns its keys", { status: 201 }),
  "PATCH /users/@me/projects/:id": d("Projects", "session", "Rename a project or change its tracking mode"),
  "DELETE /users/@me/projects/:id": d("Projects", "session", "Delete a project (OWNER)"),
  "POST /users/@me/projects/:id/regenerate-keys": d("Projects", "session", "Rotate the public, secret and webhook keys; old keys fail at once"),
  "POST /users/@me/projects/:id/reset": d("Projects", "session", "Delete every contact, event, email, campaign, segment, workflow, template, upload and webhook delivery of the project (OWNER); keys, members, domains and webhook endpoints stay"),
  "GET /users/@me/projects/:id/security": d("Projects", "session", "Bounce and complaint rates, suspension state"),
  "GET /projects/:id/security": d("Projects", "optionalProject", "Bounce and complaint rates, suspension state"),
  "GET /projects/:id/setup-state": d("Projects", "optionalProject", "What the project has set up so far (counts)"),
  "GET /projects/:id/members": d("Projects", "optionalProject", "Members of the project"),
  "POST /projects/:id/members": d("Projects", "optionalProject", "Add a member by email", { status: 201 }),
  "PATCH /projects/:id/members/:userId": d("Projects", "optionalProject", "Change a member's role"),
  "DELETE /projects/:id/members/:userId": d("Projects", "optionalProject", "Remove a member"),

  // Contacts
  "GET /contacts": d("Contacts", "secret", "List contacts (cursor list; search, subscribed filter)"),
  "POST /contacts": d("Contacts", "secret", "Create or update a contact by email (201 created, 200 updated)", { status: 201, bare400: "email is required" }),
  "POST /contacts/lookup": d("Contacts", "secret", "Look up contacts by email"),
  "GET /contacts/fields": d("Contacts", "secret", "Standard and custom fields with type and coverage"),
  "GET /contacts/fields/:field/values": d("Contacts", "secret", "Distinct values of a field with counts"),
  "GET /contacts/fields/:field/usage": d("Contacts", "secret", "Segments, campaigns and workflows that use a field"),
  "DELETE /contacts/fields/:field": d("Contacts", "secret", "Remove a custom field from every contact"),
  "POST /contacts/import": d("Contacts", "secret", "Import contacts from a CSV file (multipart field `file`); answers a job", { status: 202, fileField: "file" }),
  "GET /contacts/import/:jobId": d("Contacts", "secret", "Import job status"),
  "POST /contacts/bulk-subscribe": d("Contacts", "secret", "Subscribe contacts in bulk (job)", { status: 202 }),
  "POST /contacts/bulk-unsubscribe": d("Contacts", "secret", "Unsubscribe contacts in bulk (job)", { status: 202 }),
  "POST /contacts/bulk-delete": d("Contacts", "secret", "Delete contacts in bulk (job)", { status: 202 }),
  "GET /contacts/bulk/:jobId": d("Contacts", "secret", "Bulk job status"),
  "GET /contacts/:id": d("Contacts", "secret", "Get a contact"),
  "PATCH /contacts/:id": d("Contacts", "secret", "Update a contact's email, subscription or data"),
  "DELETE /contacts/:id": d("Contacts", "secret", "Delete a contact", { status: 204 }),

  // Events
  "POST /v1/track": d("Events", "track", "Track an event for a contact (creates the contact when new)"),
  "POST /events/track": d("Events", "track", "Track an event for a contact (alias of /v1/track)"),
  "GET /events": d("Events", "secret", "List events (cursor list)"),
  "GET /events/stats": d("Events", "secret", "Event counts"),
  "GET /events/names": d("Events", "secret", "Distinct event names with counts"),
  "GET /events/contact/:contactId": d("Events", "secret", "Events of one contact"),
  "GET /events/:eventName/usage": d("Events", "secret", "Segments and workflows that use an event name"),
  "DELETE /events/:eventName": d("Events", "secret", "Delete every event of a name"),

  // Domains
  "POST /domains": d("Domains", "optionalProject", "Add a sender domain; returns the DNS records to publish", { status: 201 }),
  "GET /domains/project/:projectId": d("Domains", "optionalProject", "Domains of a project (bare array)"),
  "GET /domains/:id": d("Domains", "optionalProject", "Get a domain with its records"),
  "GET /domains/:id/verify": d("Domains", "optionalProject", "Check the domain's DNS records now"),
  "DELETE /domains/:id": d("Domains", "optionalProject", "Remove a domain"),

  // Templates
  "GET /templates": d("Templates", "secret", "List templates (offset list)"),
  "POST /templates": d("Templates", "secret", "Create a template", { status: 201, bare400: "from is required" }),
  "GET /templates/:id": d("Templates", "secret", "Get a template"),
  "PATCH /templates/:id": d("Templates", "secret", "Update a template"),
  "DELETE /templates/:id": d("Templates", "secret", "Delete a template"),
  "POST /templates/preview": d("Templates", "secret", "Render a subject and body with sample variables"),
  "POST /templates/:id/duplicate": d("Templates", "secret", "Copy a template", { status: 201 }),
  "GET /templates/:id/usage": d("Templates", "secret", "Campaigns and workflow steps that use a template"),

  // Segments
  "GET /segments": d("Segments", "secret", "All segments, newest first (bare array)"),
  "POST /segments": d("Segments", "secret", "Create a DYNAMIC (condition tree) or STATIC segment", { status: 201, bare400: "a DYNAMIC segment has no condition" }),
  "GET /segments/:id": d("Segments", "secret", "Get a segment"),
  "PATCH /segments/:id": d("Segments", "secret", "Update a segment's name, description, condition or membership tracking"),
  "DELETE /segments/:id": d("Segments", "secret", "Delete a segment (409 while an active campaign uses it)"),
  "GET /segments/:id/contacts": d("Segments", "secret", "Members of a segment (offset list, newest contact first)"),
  "POST /segments/:id/members": d("Segments", "secret", "Add contacts to a STATIC segment by email"),
  "DELETE /segments/:id/members": d("Segments", "secret", "Remove contacts from a STATIC segment by email"),
  "POST /segments/:id/refresh": d("Segments", "secret", "Count the segment's current members (no events, no membership writes)"),
  "POST /segments/:id/compute": d("Segments", "secret", "Store a tracked segment's membership and emit entry/exit events"),

  // Campaigns
  "GET /campaigns": d("Campaigns", "secret", "List campaigns (status filter)"),
  "POST /campaigns": d("Campaigns", "secret", "Create a DRAFT campaign", { status: 201 }),
  "GET /campaigns/:id": d("Campaigns", "secret", "Get a campaign"),
  "PUT /campaigns/:id": d("Campaigns", "secret", "Update a DRAFT or SCHEDULED campaign (any subset of the create fields)"),
  "DELETE /campaigns/:id": d("Campaigns", "secret", "Delete a campaign (409 while SENDING)"),
  "POST /campaigns/:id/duplicate": d("Campaigns", "secret", "Copy a campaign as a new DRAFT", { status: 201 }),
  "POST /campaigns/:id/send": d("Campaigns", "secret", "Send now, or schedule with scheduledFor"),
  "POST /campaigns/:id/cancel": d("Campaigns", "secret", "Cancel a SCHEDULED or SENDING campaign"),
  "POST /campaigns/:id/test": d("Campaigns", "secret", "Send the campaign once to one address, subject prefixed [TEST]"),
  "GET /campaigns/:id/stats": d("Campaigns", "secret", "Counts and rates of a campaign"),
  "POST /audience/count": d("Campaigns", "secret", "Count the contacts an audience (condition tree or segment) matches now"),

  // Workflows
  "GET /workflows": d("Workflows", "secret", "List workflows (offset list; search, enabled)"),
  "GET /workflows/fields": d("Workflows", "secret", "Fields usable in workflow conditions"),
  "POST /workflows": d("Workflows", "secret", "Create a workflow (EVENT trigger, disabled)", { status: 201 }),
  "GET /workflows/:id": d("Workflows", "secret", "Get a workflow with its steps and transitions"),
  "PATCH /workflows/:id": d("Workflows", "secret", "Update name, description, trigger, entry step, enabled, allowReentry"),
  "DELETE /workflows/:id": d("Workflows", "secret", "Delete a workflow (409 with active executions)"),
  "POST /workflows/:id/steps": d("Workflows", "secret", "Add a step (SEND_EMAIL, DELAY, WAIT_FOR_EVENT, CONDITION, WEBHOOK, UPDATE_CONTACT, EXIT)", { status: 201 }),
  "PATCH /workflows/:id/steps/:stepId": d("Workflows", "secret", "Update a step's name, config or position"),
  "DELETE /workflows/:id/steps/:stepId": d("Workflows", "secret", "Delete a step (splice=true reconnects its neighbours)"),
  "POST /workflows/:id/transitions": d("Workflows", "secret", "Connect two steps (branch yes|no, event|timeout)", { status: 201 }),
  "DELETE /workflows/:id/transitions/:transitionId": d("Workflows", "secret", "Remove a transition"),
  "POST /workflows/:id/executions/cancel-all": d("Workflows", "secret", "Cancel every running or waiting execution"),
  "POST /workflows/:id/executions": d("Workflows", "secret", "Start an execution for a contact (MANUAL)", { status: 201 }),
  "GET /workflows/:id/executions": d("Workflows", "secret", "List executions (offset list, status filter)"),
  "GET /workflows/:id/executions/:executionId": d("Workflows", "secret", "Get an execution with its step log"),
  "DELETE /workflows/:id/executions/:executionId": d("Workflows", "secret", "Cancel a running or waiting execution"),

  // Sending
  "POST /v1/send": d("Sending", "apiOnly", "Send a transactional email to one or more recipients (template or inline content)", {
    description: "Accepts an `Idempotency-Key` header: the same key with the same body answers the first response again.",
  }),
  "POST /v1/verify": d("Sending", "apiOnly", "Check an email address (syntax, MX, disposable, typo suggestion)"),

  // Emails and activity
  "GET /emails": d("Emails", "secret", "The per-message log (cursor list; contactId, campaignId, status, to filters)"),
  "GET /emails/:id": d("Emails", "secret", "One message: status, attempts, last reply, timestamps"),
  "GET /emails/:id/raw": d("Emails", "secret", "The exact message as handed to SMTP (message/rfc822), while the project keeps it: sandbox mail always, other mail only with MAILSVC_KEEP_RAW; 404 when not kept", {
    produces: "message/rfc822",
  }),
  "GET /emails/:id/message": d("Emails", "secret", "A kept message read back (headers, HTML, text, attachments, DKIM result against the domain's key) for the dashboard's email view; 404 when not kept"),
  "GET /suppressions": d("Suppressions", "secret", "The suppression list (cursor list, newest first; reason and email substring filters)"),
  "POST /suppressions": d("Suppressions", "secret", "Suppress an address by hand (reason MANUAL); 409 CONFLICT when it is already on the list", { status: 201 }),
  "POST /suppressions/import": d("Suppressions", "secret", "Suppress every address of a CSV (column `email`, reason MANUAL) in a background job; answers `{ jobId }`", { status: 202, fileField: "file" }),
  "GET /suppressions/import/:jobId": d("Suppressions", "secret", "Status of a suppression import job"),
  "GET /suppressions/:id": d("Suppressions", "secret", "One suppression: reason, detail and source"),
  "DELETE /suppressions/:id": d("Suppressions", "secret", "Lift a suppression: later sends to the address are attempted again (the contact's subscription is unchanged)"),
  "GET /activity": d("Activity", "secret", "Activity feed (cursor list)"),
  "GET /activity/stats": d("Activity", "secret", "Activity counts by type"),
  "GET /activity/recent-count": d("Activity", "secret", "Number of recent activity items"),
  "GET /activity/types": d("Activity", "secret", "Activity types"),
  "GET /activity/upcoming": d("Activity", "secret", "Scheduled campaigns, pending retries and waiting workflow executions"),

  // Tracking pages (reached from emails; the token is signed)
  "GET /t/o/:token": d("Tracking", "token", "Open-tracking pixel", { produces: "image/gif" }),
  "GET /t/c/:token": d("Tracking", "token", "Click tracking redirect", { status: 302, produces: "text/plain" }),
  "GET /confirm/:token": d("Tracking", "token", "Double opt-in confirmation link: subscribes the contact once (303 to the project's redirectUrl, or a page); 404 not valid, 410 used or expired", { produces: "text/html" }),
  "GET /unsubscribe/:token": d("Tracking", "token", "Unsubscribe page", { produces: "text/html" }),
  "POST /unsubscribe/:token": d("Tracking", "token", "Unsubscribe (also one-click List-Unsubscribe-Post)", { produces: "text/html" }),
  "GET /subscribe/:token": d("Tracking", "token", "Subscribe page", { produces: "text/html" }),
  "POST /subscribe/:token": d("Tracking", "token", "Subscribe again", { produces: "text/html" }),
  "GET /manage/:token": d("Tracking", "token", "Subscription management page", { produces: "text/html" }),
  "POST /manage/:token": d("Tracking", "token", "Change the subscription from the management page", { produces: "text/html" }),

  // Dashboard (served by the binary)
  "GET /": d("Dashboard", "none", "The dashboard", { produces: "text/html" }),
  "GET /assets/:name": d("Dashboard", "none", "Dashboard assets", { produces: "application/octet-stream" }),
  "GET /auth/reset-password": d("Dashboard", "none", "Password reset link from the email: redirects into the dashboard", { status: 302, produces: "text/plain" }),
  "GET /auth/verify-email": d("Dashboard", "none", "Verification link from the email: redirects into the dashboard", { status: 302, produces: "text/plain" }),

  // Inbound infrastructure callbacks
  // Domains (deliverability)
  "PATCH /domains/:id": d("Domains", "optionalProject", "Turn Ed25519 dual signing on or off for a domain"),
  "GET /domains/:id/dmarc": d("Domains", "optionalProject", "DMARC aggregate reports received for the domain: pass/fail counts by source IP"),
  "POST /domains/:id/rotate-dkim": d("Domains", "optionalProject", "Start a DKIM key rotation: a new selector is published beside the old one and takes over once verified"),
  // Analytics
  "GET /analytics/timeseries": d("Analytics", "secret", "Sent, delivered, opened, clicked, bounced and complained per day or hour (empty buckets zero)"),
  "GET /analytics/top-campaigns": d("Analytics", "secret", "Campaigns ranked by sent, opens or clicks"),
  "GET /analytics/campaign-stats": d("Analytics", "secret", "Campaign counts per status and average open/click rates"),
  "GET /analytics/top-events": d("Analytics", "secret", "Most frequent event names with their trend against the previous window"),
  // Billing
  "GET /users/@me/projects/:id/billing-limits": d("Billing", "session", "Monthly caps per category (null: unlimited)"),
  "PUT /users/@me/projects/:id/billing-limits": d("Billing", "session", "Change monthly caps (OWNER or ADMIN); omitted categories keep theirs"),
  "GET /users/@me/projects/:id/billing-consumption": d("Billing", "session", "This calendar month's use per category with limits and percentages"),
  "GET /users/@me/projects/:id/billing-invoices": d("Billing", "session", "Invoices of the project's subscription (empty while billing is off)"),
  "POST /users/@me/projects/:id/checkout": d("Billing", "session", "Create a Stripe checkout session; 400 BILLING_DISABLED without a payment provider"),
  "POST /users/@me/projects/:id/billing-portal": d("Billing", "session", "Open the Stripe billing portal; 400 BILLING_DISABLED without a payment provider"),
  "POST /webhooks/incoming/stripe": d("Inbound", "none", "Stripe events (Stripe-Signature verified; each event applied once)"),
  // Uploads
  "POST /uploads/image": d("Uploads", "secret", "Upload a png, jpeg, gif or webp image (multipart field `file`, 5 MB max); answers its public URL", { status: 201, fileField: "file" }),
  "GET /uploads": d("Uploads", "secret", "The project's uploads (cursor list)"),
  "DELETE /uploads/:id": d("Uploads", "secret", "Delete an upload (its public URL answers 404 afterwards)"),
  "GET /uploads/:file": d("Uploads", "none", "An uploaded image by its public URL (`<id>.<ext>`), with a long cache lifetime", { produces: "image/*" }),
  "POST /webhooks/sns": d("Inbound", "none", "Bounce and complaint notifications from the email infrastructure"),

  // Outbound webhooks
  "GET /webhook-endpoints": d("Webhooks", "secret", "List webhook endpoints (cursor list)"),
  "POST /webhook-endpoints": d("Webhooks", "secret", "Register an endpoint for email.*, contact.subscribed|unsubscribed and segment.<slug>.entry|exit events", {
    status: 201,
    description:
      "Each subscribed event is POSTed as `{ type, timestamp, data }`, signed per Standard Webhooks (`webhook-id`, `webhook-timestamp`, `webhook-signature: v1,<base64 HMAC-SHA256>` keyed by the returned `whsec_` secret), retried on non-2xx or network failure after the waits of MAILSVC_WEBHOOK_RETRY_SCHEDULE, then failed. Loopback, private and link-local targets are refused unless MAILSVC_ALLOW_PRIVATE_WEBHOOKS.",
  }),
  "GET /webhook-endpoints/:id": d("Webhooks", "secret", "Get an endpoint (with its secret)"),
  "PATCH /webhook-endpoints/:id": d("Webhooks", "secret", "Change an endpoint's URL, events, description or enabled flag (disabling fails its pending deliveries)"),
  "DELETE /webhook-endpoints/:id": d("Webhooks", "secret", "Delete an endpoint and its delivery log"),
  "GET /webhook-endpoints/:id/deliveries": d("Webhooks", "secret", "Delivery log of an endpoint (cursor list; status filter PENDING|DELIVERED|FAILED)"),
  "POST /webhook-endpoints/:id/test": d("Webhooks", "secret", "Send a signed `webhook.test` event now (one attempt) and log it"),
};
