-- Segments: DYNAMIC (a condition tree, live) and STATIC (a managed member list). segment_members
-- holds the members of a STATIC segment and the stored membership of a tracked DYNAMIC segment
-- (what the last compute/re-evaluation saw, so entry/exit events fire once per change).

CREATE TABLE segments (
  id text COLLATE "C" PRIMARY KEY,
  project_id text COLLATE "C" NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
  name text COLLATE "C" NOT NULL,
  slug text COLLATE "C" NOT NULL,                      -- fixed at creation: event names segment.<slug>.entry|exit
  description text COLLATE "C",
  type text COLLATE "C" NOT NULL,                      -- DYNAMIC | STATIC
  condition text COLLATE "C",                          -- JSON condition tree (DYNAMIC)
  track_membership bigint NOT NULL DEFAULT 0,
  member_count bigint NOT NULL DEFAULT 0, -- cached; refreshed by refresh, compute and the sweep
  created_at bigint NOT NULL,
  updated_at bigint NOT NULL
);
CREATE UNIQUE INDEX segments_project_slug ON segments (project_id, slug);
CREATE INDEX segments_project_created ON segments (project_id, created_at);
CREATE INDEX segments_tracked ON segments (project_id) WHERE track_membership = 1;

CREATE TABLE segment_members (
  segment_id text COLLATE "C" NOT NULL REFERENCES segments(id) ON DELETE CASCADE,
  contact_id text COLLATE "C" NOT NULL REFERENCES contacts(id) ON DELETE CASCADE,
  created_at bigint NOT NULL,
  PRIMARY KEY (segment_id, contact_id)
) ;
CREATE INDEX segment_members_contact ON segment_members (contact_id);
