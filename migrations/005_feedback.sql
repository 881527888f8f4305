-- Feedback loop (opens, clicks, subscription pages, bounces, complaints, inbound mail).
-- It keeps no tables of its own: it writes to emails, suppressions, contacts and events.
-- The inbound listener looks sender domains up by name at RCPT time (any project): index that.
CREATE INDEX domains_domain_status ON domains (domain, status);
