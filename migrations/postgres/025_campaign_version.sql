-- A campaign row's version: every write through the campaign store bumps it, so a send that read the
-- row, validated and counted its audience, and then found the version changed knows it lost a race
-- (a concurrent PUT, send, cancel or delete) without comparing the whole row.
ALTER TABLE campaigns ADD COLUMN version bigint NOT NULL DEFAULT 0;
