-- A board cell's hashing share (artifacts.Hashing, issue 29): the fraction of the instructions
-- of its untimed hashing pass spent in the firmware's SHA-2 and SHA-3, its bound from the
-- counter's resolution, or why it was not measured ('' with a NULL share: no pass was run, as
-- for every cell published before this).
ALTER TABLE cells ADD COLUMN hash_share REAL;
ALTER TABLE cells ADD COLUMN hash_bound REAL;
ALTER TABLE cells ADD COLUMN hash_absent TEXT NOT NULL DEFAULT '';
