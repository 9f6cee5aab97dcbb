-- What the run page needs of a cell without opening the bundle: the key form the timed
-- operation received, the iterations the manifest asked for and whether the time budget
-- stopped the cell before them. Runs published before this have '' and 0 until
-- `pqrepro rebuild` fills them from their bundles.
ALTER TABLE cells ADD COLUMN keys TEXT NOT NULL DEFAULT '';
ALTER TABLE cells ADD COLUMN requested INTEGER NOT NULL DEFAULT 0;
ALTER TABLE cells ADD COLUMN budget_reached INTEGER NOT NULL DEFAULT 0;
-- The version of the comparison code that made runs.report (0: before versions existed).
-- A report older than the portal's is shown as it was stored, labelled, until
-- `pqrepro rebuild` re-derives it from the bundle; it is never recomputed while rendering.
ALTER TABLE runs ADD COLUMN report_version INTEGER NOT NULL DEFAULT 0;
