-- Segments: DYNAMIC (a condition tree, live) and STATIC (a managed member list). segment_members
-- holds the members of a STATIC segment and the stored membership of a tracked DYNAMIC segment
-- (what the last compute/re-evaluation saw, so entry/exit events fire once per change).

CREATE TABLE segments (
  id TEXT PRIMARY KEY,
  project_id TEXT NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
  name TEXT NOT NULL,
  slug TEXT NOT NULL,                      -- fixed at creation: event names segment.<slug>.entry|exit
  description TEXT,
  type TEXT NOT NULL,                      -- DYNAMIC | STATIC
  condition TEXT,                          -- JSON condition tree (DYNAMIC)
  track_membership INTEGER NOT NULL DEFAULT 0,
  member_count INTEGER NOT NULL DEFAULT 0, -- cached; refreshed by refresh, compute and the sweep
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
);
CREATE UNIQUE INDEX segments_project_slug ON segments (project_id, slug);
CREATE INDEX segments_project_created ON segments (project_id, created_at);
CREATE INDEX segments_tracked ON segments (project_id) WHERE track_membership = 1;

CREATE TABLE segment_members (
  segment_id TEXT NOT NULL REFERENCES segments(id) ON DELETE CASCADE,
  contact_id TEXT NOT NULL REFERENCES contacts(id) ON DELETE CASCADE,
  created_at INTEGER NOT NULL,
  PRIMARY KEY (segment_id, contact_id)
) WITHOUT ROWID;
CREATE INDEX segment_members_contact ON segment_members (contact_id);
