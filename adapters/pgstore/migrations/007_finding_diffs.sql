-- A finding keeps the fields that differed when it was opened (reconcile.Decision.Diffs), as a
-- JSON array of {field, local, external}; NULL when the classifier named none.
ALTER TABLE {{table "findings"}} ADD COLUMN diffs jsonb;
-- FindingQuery.Search matches a finding's external id or record id exactly, open or resolved.
CREATE INDEX {{name "findings_external_id"}} ON {{table "findings"}} (external_id);
CREATE INDEX {{name "findings_record_any"}} ON {{table "findings"}} (record_id);
