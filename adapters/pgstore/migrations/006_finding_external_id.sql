-- A finding keeps the external id of the object it is about, as it was when the finding was
-- opened: the review console links it to the external system's dashboard whatever table the
-- finding's row is in, and after the row is gone. Empty for findings opened before.
ALTER TABLE {{table "findings"}} ADD COLUMN external_id text NOT NULL DEFAULT '';
