package templates

// FirmwareRow is a stored firmware build.
type FirmwareRow struct {
	Digest, Filename, Size, BoardClass, Toolchain, Libraries, SourceURL, SourceCommit, UploadedBy, When string
}

// FirmwareView is the firmware page.
type FirmwareView struct {
	Page
	Builds   []FirmwareRow
	Classes  []string
	SignedIn bool
	MaxBytes string
}
