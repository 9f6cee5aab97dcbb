-- How a firmware build was built: build_info is the JSON of store.FirmwareBuildInfo (compiler
-- and flags, section sizes read from the ELF by the portal, and what metadata.json says beside
-- them); metadata_json is the metadata.json uploaded with it, as it came ('' when none was).
-- Builds stored before have neither.
ALTER TABLE firmware ADD COLUMN build_info TEXT NOT NULL DEFAULT '';
ALTER TABLE firmware ADD COLUMN metadata_json TEXT NOT NULL DEFAULT '';
