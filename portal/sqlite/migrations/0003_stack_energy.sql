-- Per-operation stack high-water marks (firmware boards) and energy (RAPL or a meter), so
-- leaderboards can rank by them as they rank by heap bytes.
ALTER TABLE cells ADD COLUMN stack_bytes DOUBLE PRECISION;
ALTER TABLE cells ADD COLUMN energy_j_per_op DOUBLE PRECISION;
