// Package reason gives a reason to refuse a request its fixed code,
// where the reason is not a failed validation (whose code is its
// *accesstoken.ValidationError's): the reading of the token
// (internal/bearer), the scope a route needs, a DPoP proof, a SCIM
// token. accesstoken.ReasonCode reads the code; the text is Go's, for
// logs, and may change.
package reason

// Error is a reason to refuse a request, with its code.
type Error struct {
	// Code is fixed, snake case and unique: what observe.Event's Reason
	// and accesstoken.ReasonCode say.
	Code string
	text string
}

// New returns the reason of code, whose Go text is text.
func New(code, text string) *Error { return &Error{Code: code, text: text} }

func (e *Error) Error() string { return e.text }
