-- Rankings by method and board class status. A run's class status says whether its board
-- class was verified (intrinsic, or checked against the board catalogue) or only declared;
-- leaderboards group by method and class status too, so cells carry both, like the board
-- class and level of 0002, and the covering index cells_rank is rebuilt to include them.
--
-- Runs published before the check existed: an emulated or hardware run's class came from
-- its driver (verified), and so did a host run filed under "host"; a host run filed under
-- any other class (a catalogue reference board such as rpi4-b, or a class of the operator's
-- own) was an operator's --board-class that nothing checked, so it is declared.
ALTER TABLE runs ADD COLUMN class_status TEXT NOT NULL DEFAULT 'verified' CHECK (class_status IN ('verified', 'declared'));
UPDATE runs SET class_status = 'declared' WHERE level = 'host' AND board_class <> 'host';
ALTER TABLE cells ADD COLUMN method TEXT NOT NULL DEFAULT '';
ALTER TABLE cells ADD COLUMN class_status TEXT NOT NULL DEFAULT '';
UPDATE cells SET
	method       = (SELECT r.method FROM runs r WHERE r.id = cells.run_id),
	class_status = (SELECT r.class_status FROM runs r WHERE r.id = cells.run_id);
DROP INDEX cells_rank;
CREATE INDEX cells_rank ON cells (algorithm, operation, status, unit, level, method, class_status, board_class, origin, median, p25, p75, n, run_id);
