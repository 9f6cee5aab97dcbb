-- How a cell's energy per operation was measured: 'rapl' (the host's RAPL counter over the
-- timed iterations) or 'meter' (E_op = (P_load - P_idle) x T_op from a power meter's idle and
-- load windows, power.csv); '' for a cell without energy. Energy leaderboards rank within one
-- method only. Rows stored before are labelled from their run's environment (a run with a
-- meter recorded it there).
ALTER TABLE cells ADD COLUMN energy_method TEXT NOT NULL DEFAULT '';
UPDATE cells SET energy_method = CASE
	WHEN (SELECT environment FROM runs WHERE runs.id = cells.run_id) LIKE '%"meter": {%' THEN 'meter'
	ELSE 'rapl' END
WHERE energy_j_per_op IS NOT NULL;
