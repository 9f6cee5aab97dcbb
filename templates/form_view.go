package templates

// FormError is why a posted form was refused, shown beside the field it names (Field is the
// input's name; "" for the form as a whole) on the page re-rendered with the input kept.
type FormError struct {
	Field, Msg string
}

// On reports whether the error is about the named field.
func (e FormError) On(field string) bool { return e.Msg != "" && e.Field == field }

// Whole reports whether the error is about the form as a whole (or a field the form does
// not show), so it is shown above the form.
func (e FormError) Whole(fields ...string) bool {
	if e.Msg == "" {
		return false
	}
	for _, f := range fields {
		if f == e.Field {
			return false
		}
	}
	return true
}

// RerunForm is what the re-run form was posted with, and why it was refused.
type RerunForm struct {
	Board, Firmware, Iterations string
	Error                       FormError
}

// FirmwareForm is what the firmware upload form was posted with (the files cannot be kept:
// a browser never fills a file input), and why it was refused.
type FirmwareForm struct {
	BoardClass, Toolchain, Libraries, SourceURL, SourceCommit string
	Error                                                     FormError
}

// WithdrawForm is a refused withdrawal of the build Digest, with the reason typed.
type WithdrawForm struct {
	Digest, Reason string
	Error          FormError
}

// KeysForm is what the key registration form was posted with, and why it was refused.
type KeysForm struct {
	Label string
	Error FormError
}

// EnrolTokenForm, AccountForm and WitnessForm are the administrator's forms as posted, and
// why they were refused.
type EnrolTokenForm struct {
	Label, Uses, Hours string
	Error              FormError
}

type AccountForm struct {
	Name, Role string
	Error      FormError
}

type WitnessForm struct {
	Ed25519, MLDSA44, URL, Proof string
	Error                        FormError
}
