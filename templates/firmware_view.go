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

// FirmwareBuildView is one firmware build's page: what it is, where it came from, and how it
// was built, each fact with where it was read.
type FirmwareBuildView struct {
	Page
	Digest, Filename, Size, BoardClass, Toolchain, Libraries, Source, UploadedBy, When, Withdrawn string
	// Recorded is false for a build stored before the portal kept build facts.
	Recorded bool
	// Compiler and Flags as the portal read them, with where (CompilerFrom, FlagsFrom);
	// Producers when the ELF's compile units were compiled differently (more than one).
	Compiler, CompilerFrom, Flags, FlagsFrom string
	Producers                                []string
	// MetaCompiler, MetaCFlags and LDFlags are what metadata.json says ("" when absent).
	MetaCompiler, MetaCFlags, LDFlags string
	// Sections from the ELF's section headers; Text, Data and BSS their sums; SizeCheck
	// compares metadata.json's size report with them ("" when it gave none).
	Sections        []FirmwareSectionRow
	Text, Data, BSS string
	SizeCheck       string
	// CodeSize is metadata.json's code size per algorithm, CodeSizeMethod how it counted.
	CodeSize       []FirmwareCodeRow
	CodeSizeMethod string
	BuildID        string
	// HasMetadata: metadata.json was uploaded with the build (downloadable).
	HasMetadata bool
}

// FirmwareSectionRow is one allocated ELF section: name, kind (text, data, bss) and exact
// size in bytes.
type FirmwareSectionRow struct{ Name, Kind, Size string }

// FirmwareCodeRow is metadata.json's code size of one algorithm or part, in exact bytes.
type FirmwareCodeRow struct{ Group, Code, ROData, Total, WithShared string }
