-- Nothing pooled, and whose verdict (issue 21).
--
-- A cell's implementation (artifacts.Implementation.Key: the code it timed, with its version
-- and digest) and the size of the message its operation signed or verified: leaderboards,
-- the schemes table and the highlights group by them, and by the key form (cells.keys), as
-- they do by unit, method and class status, so two implementations or two message sizes are
-- never one row. Cells published before this have '' and 0 until `pqrepro rebuild` fills
-- them from their bundles (the firmware digest, the host's libraries).
ALTER TABLE cells ADD COLUMN implementation TEXT NOT NULL DEFAULT '';
ALTER TABLE cells ADD COLUMN msg_bytes INTEGER NOT NULL DEFAULT 0;
DROP INDEX cells_rank;
CREATE INDEX cells_rank ON cells (algorithm, operation, status, unit, level, method, class_status, board_class, origin, implementation, keys, msg_bytes,
	median, p25, p75, n, run_id);
DROP INDEX cells_scheme;
CREATE INDEX cells_scheme ON cells (level, board_class, status, algorithm, operation, unit, method, class_status, implementation, keys, msg_bytes,
	median, p25, p75, n, run_id);
ALTER TABLE leader_highlights ADD COLUMN implementation TEXT NOT NULL DEFAULT '';
ALTER TABLE leader_highlights ADD COLUMN keys TEXT NOT NULL DEFAULT '';
ALTER TABLE leader_highlights ADD COLUMN msg_bytes INTEGER NOT NULL DEFAULT 0;

-- Whether a run ran a manifest of the catalogue (1) or its own (0): only the catalogue's
-- manifests count toward a paper's claims. Runs published before this count as before until
-- `pqrepro rebuild` checks their manifests.
ALTER TABLE runs ADD COLUMN catalogue INTEGER NOT NULL DEFAULT 1;

-- Claim tallies keep the portal's own runners and community submissions apart.
ALTER TABLE claim_tallies ADD COLUMN origin TEXT NOT NULL DEFAULT '';
DROP INDEX claim_tallies_key;
CREATE INDEX claim_tallies_key ON claim_tallies (paper, claim_id, origin, level, board_class, class_status, verdict, n);
DELETE FROM claim_tallies;
INSERT INTO claim_tallies (paper, claim_id, origin, level, board_class, class_status, verdict, n)
	SELECT v.paper, v.claim_id, r.origin, r.level, r.board_class, v.class_status, v.verdict, COUNT(*)
	FROM claim_verdicts v JOIN runs r ON r.id = v.run_id
	GROUP BY v.paper, v.claim_id, r.origin, r.level, r.board_class, v.class_status, v.verdict;
