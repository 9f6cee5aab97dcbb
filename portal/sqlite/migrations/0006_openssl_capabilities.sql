-- Jobs remember their manifest's timing method, so an openssl-cli job is leased only to a
-- runner whose board can run it; runners remember the capabilities they enrolled with (which
-- openssl they have), so the portal can say why a board cannot take such a job.
ALTER TABLE jobs ADD COLUMN method TEXT NOT NULL DEFAULT 'in-process';
UPDATE jobs SET method = 'process-per-operation' WHERE manifest_yaml LIKE '%method: process-per-operation%';
UPDATE jobs SET method = 'openssl-cli' WHERE manifest_yaml LIKE '%method: openssl-cli%';
ALTER TABLE runners ADD COLUMN capabilities TEXT NOT NULL DEFAULT '{}';
