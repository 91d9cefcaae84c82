-- A finding that a later verified judgment of its record replaced (a drift of another kind) is
-- closed as superseded and names the finding that replaced it; the console shows the chain.
-- NULL for every other finding. No foreign key: retention may delete either end.
ALTER TABLE {{table "findings"}} ADD COLUMN superseded_by bigint;
CREATE INDEX {{name "findings_superseded_by"}} ON {{table "findings"}} (superseded_by) WHERE superseded_by IS NOT NULL;
