-- Open tracking per content: the campaign's, template's (and through its config, the workflow step's)
-- trackOpens. NULL = as the project's tracking mode says, 0 = no open pixel, 1 = the pixel unless the
-- project's tracking is DISABLED. The email content carries the value resolved when it was made.
ALTER TABLE campaigns ADD COLUMN track_opens INTEGER;
ALTER TABLE templates ADD COLUMN track_opens INTEGER;
ALTER TABLE email_contents ADD COLUMN track_opens INTEGER;
-- The project's postal address (optional): shown in the footer of MARKETING mail, HTML and text parts.
ALTER TABLE projects ADD COLUMN postal_address TEXT;
