-- Bundles bound to their job. A lease carries a random nonce that the runner signs into its
-- bundle (with the job, the lease and the portal's public URL); completion compares them.
ALTER TABLE jobs ADD COLUMN lease_nonce TEXT;

-- How a run's attestation binds it: 'job' (a v2 bundle signed for the job and lease it
-- answered), 'unbound' (a v2 bundle with no job: a community submission), 'legacy' (a v1
-- bundle, signed before binding existed). Every run published before this migration came
-- from a v1 bundle.
ALTER TABLE runs ADD COLUMN binding TEXT NOT NULL DEFAULT 'legacy' CHECK (binding IN ('job', 'unbound', 'legacy'));

-- A bundle is published once. Runs that repeated an earlier run's exact bundle (same bytes,
-- so the same numbers) are removed with their cells and verdicts; a job that published such
-- a copy points at the first run of that bundle.
UPDATE jobs SET run_id = (SELECT MIN(r2.id) FROM runs r1 JOIN runs r2 ON r2.bundle_digest = r1.bundle_digest WHERE r1.id = jobs.run_id)
	WHERE run_id IS NOT NULL;
DELETE FROM cells WHERE run_id IN (SELECT r.id FROM runs r WHERE r.id > (SELECT MIN(f.id) FROM runs f WHERE f.bundle_digest = r.bundle_digest));
DELETE FROM claim_verdicts WHERE run_id IN (SELECT r.id FROM runs r WHERE r.id > (SELECT MIN(f.id) FROM runs f WHERE f.bundle_digest = r.bundle_digest));
DELETE FROM runs WHERE id > (SELECT MIN(f.id) FROM runs f WHERE f.bundle_digest = runs.bundle_digest);
CREATE UNIQUE INDEX runs_bundle_digest ON runs (bundle_digest);
