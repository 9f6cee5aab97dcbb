-- A firmware build withdrawn by the administrator or its uploader: when, and why. Its file
-- stays downloadable (runs that used it name it); new jobs naming it are refused.
ALTER TABLE firmware ADD COLUMN withdrawn_at BIGINT;
ALTER TABLE firmware ADD COLUMN withdrawn_reason TEXT NOT NULL DEFAULT '';
