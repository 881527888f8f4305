-- The contact-field rollup's update trigger (011) walks both versions of the data four times and
-- runs two statements on every data change, although most changes keep the same keys and kinds (a
-- new value of the same type). A guard compares the two shapes first, the ordered list of
-- [key, kind] pairs as JSON, two walks and no statement: equal shapes cannot change the counts, so
-- the body (unchanged) runs only when they differ. Unequal lists of equal sets (keys reordered)
-- still run the body, which is exact either way.
DROP TRIGGER contacts_fields_update;
CREATE TRIGGER contacts_fields_update AFTER UPDATE OF data ON contacts
WHEN OLD.data <> NEW.data
  AND (SELECT json_group_array(json_array(j.key, CASE WHEN j.type = 'text' AND j.atom GLOB '[0-9][0-9][0-9][0-9]-[0-1][0-9]-[0-3][0-9]*' THEN 'date' ELSE j.type END)) FROM json_each(OLD.data) j)
      IS NOT (SELECT json_group_array(json_array(j.key, CASE WHEN j.type = 'text' AND j.atom GLOB '[0-9][0-9][0-9][0-9]-[0-1][0-9]-[0-3][0-9]*' THEN 'date' ELSE j.type END)) FROM json_each(NEW.data) j)
BEGIN
  UPDATE contact_field_stats SET n = n - 1
  WHERE project_id = OLD.project_id AND (key, kind) IN (
    SELECT j.key, CASE WHEN j.type = 'text' AND j.atom GLOB '[0-9][0-9][0-9][0-9]-[0-1][0-9]-[0-3][0-9]*' THEN 'date' ELSE j.type END
    FROM json_each(OLD.data) j
    EXCEPT
    SELECT j.key, CASE WHEN j.type = 'text' AND j.atom GLOB '[0-9][0-9][0-9][0-9]-[0-1][0-9]-[0-3][0-9]*' THEN 'date' ELSE j.type END
    FROM json_each(NEW.data) j);
  INSERT INTO contact_field_stats (project_id, key, kind, n)
    SELECT NEW.project_id, x.key, x.kind, 1 FROM (
      SELECT j.key AS key, CASE WHEN j.type = 'text' AND j.atom GLOB '[0-9][0-9][0-9][0-9]-[0-1][0-9]-[0-3][0-9]*' THEN 'date' ELSE j.type END AS kind
      FROM json_each(NEW.data) j
      EXCEPT
      SELECT j.key, CASE WHEN j.type = 'text' AND j.atom GLOB '[0-9][0-9][0-9][0-9]-[0-1][0-9]-[0-3][0-9]*' THEN 'date' ELSE j.type END
      FROM json_each(OLD.data) j) x WHERE true
  ON CONFLICT (project_id, key, kind) DO UPDATE SET n = n + 1;
END;
