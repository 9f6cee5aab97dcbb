package templates

// FirmwareRow is a stored firmware build.
type FirmwareRow struct {
	Digest, Filename, Size, BoardClass, Toolchain, Libraries, SourceURL, SourceCommit, UploadedBy, When string
	// Withdrawn says when and why the build was withdrawn ("" while it is not).
	Withdrawn string
	// CanWithdraw: the signed-in account (administrator or uploader) may withdraw it.
	CanWithdraw bool
}

// FirmwareView is the firmware page.
type FirmwareView struct {
	Page
	Builds   []FirmwareRow
	Classes  []string
	SignedIn bool
	// Role is set to the signed-in account's role when that role may not upload firmware.
	Role     string
	MaxBytes string
	// Upload and Withdraw are the forms as posted when they were refused (zero otherwise).
	Upload   FirmwareForm
	Withdraw WithdrawForm
}
