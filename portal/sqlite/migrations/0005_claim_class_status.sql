-- A claim verdict is tallied per board class, assurance and class status: a verdict obtained
-- on a declared (unchecked) board class is never counted with one on a verified class.
-- Verdicts published before class statuses existed keep ''.
ALTER TABLE claim_verdicts ADD COLUMN class_status TEXT NOT NULL DEFAULT '';
