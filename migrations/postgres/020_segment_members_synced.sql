-- A tracked DYNAMIC segment's memberCount moves by one with each entry and exit only while it equals
-- the number of its stored member rows (members_synced = 1: set by compute and the sweep, which store
-- the whole membership). Otherwise (just created over existing matches, condition edited, refreshed)
-- memberCount holds a live count, and a move schedules a recount instead of adding to it.
ALTER TABLE segments ADD COLUMN members_synced bigint NOT NULL DEFAULT 0;
