package templates

// KeyRow is a registered key pair.
type KeyRow struct {
	ID                              int64
	Fingerprint, Label, Owner, When string
	// Revoked is when the keys were revoked ("" if not).
	Revoked string
}

// SubmitView is the submit page.
type SubmitView struct {
	Page
	SignedIn bool
	Keys     []KeyRow
	MaxBytes string
	// Challenge is a fresh proof-of-possession challenge for registering keys.
	Challenge string
	// Outcome is the result of the last submission, if any.
	Refused string
	RunID   int64
	// Already: the bundle was published before, as RunID; nothing new was stored.
	Already bool
	// Keys is the key registration form as posted when it was refused; BundleError why the
	// bundle form was refused before its file was read (no file, too large).
	KeysForm    KeysForm
	BundleError FormError
}
