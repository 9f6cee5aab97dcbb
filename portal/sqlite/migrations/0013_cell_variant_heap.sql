-- A cell's variant (a crypto/tls stack beside the engine, a corrected openssl command) and a
-- board's peak heap per operation, so the run page labels variant rows and shows a board's heap.
-- Rows published before this migration get them from `pqrepro rebuild`.
ALTER TABLE cells ADD COLUMN variant TEXT NOT NULL DEFAULT '';
ALTER TABLE cells ADD COLUMN peak_heap_bytes INTEGER;
