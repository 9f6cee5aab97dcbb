package templates

// SigninView is the sign-in page.
type SigninView struct {
	Page
	Next, Error string
}

// TokenRow is an enrolment token's record.
type TokenRow struct {
	ID          int64
	Label, When string
	Revoked     bool
	Runners     int
	// Uses is "k of n"; Expires a time or "never"; Unusable why it cannot enrol ("" if it can).
	Uses, Expires, Unusable string
}

// UserRow is an account.
type UserRow struct {
	ID               int64
	Name, Role, When string
	// Revoked is when the account was revoked ("" if not).
	Revoked string
}

// AdminView is the administration page.
type AdminView struct {
	Page
	// NewToken is a token just created, shown once; NewTokenKind says what it is for.
	NewToken, NewTokenKind string
	Tokens                 []TokenRow
	Users                  []UserRow
	Runners                []RunnerRow
	Keys                   []KeyRow
	// ListNote says which lists are at their bound and show only their newest rows.
	ListNote string
	// EnrolForm, AccountForm and WitnessForm are the forms as posted when they were refused.
	EnrolForm   EnrolTokenForm
	AccountForm AccountForm
	WitnessForm WitnessForm
}

// usesValue is the enrolment token form's uses: as posted when it was refused, else 1.
func (v AdminView) usesValue() string {
	if v.EnrolForm.Error.Msg != "" {
		return v.EnrolForm.Uses
	}
	return "1"
}
