-- Leaderboards read one (algorithm, operation) across every run. Copy the run's board class
-- and assurance into its cells and cover the query with one index, so a leaderboard is a
-- single index range scan instead of a join into the (large) runs rows.
ALTER TABLE cells ADD COLUMN board_class TEXT NOT NULL DEFAULT '';
ALTER TABLE cells ADD COLUMN level TEXT NOT NULL DEFAULT '';
ALTER TABLE cells ADD COLUMN origin TEXT NOT NULL DEFAULT '';
UPDATE cells SET
	board_class = (SELECT r.board_class FROM runs r WHERE r.id = cells.run_id),
	level       = (SELECT r.level FROM runs r WHERE r.id = cells.run_id),
	origin      = (SELECT r.origin FROM runs r WHERE r.id = cells.run_id);
DROP INDEX cells_leaderboard;
CREATE INDEX cells_rank ON cells (algorithm, operation, status, unit, level, board_class, origin, median, p25, p75, n, run_id);
