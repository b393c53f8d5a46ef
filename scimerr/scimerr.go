// Package scimerr writes SCIM 2.0 error answers ([RFC 7644] §3.12), the only
// error format SCIM endpoints use ([the contract] §4).
//
// An *Error is an error, so a SCIM handler can return one and have
// [Handler] write it:
//
//	mux.Handle("GET /scim/Users/{id}", scimerr.Handler(func(w http.ResponseWriter, r *http.Request) error {
//		u, ok := users[r.PathValue("id")]
//		if !ok {
//			return scimerr.NotFound("no such user")
//		}
//		return json.NewEncoder(w).Encode(u)
//	}))
//
// [RFC 7644]: https://www.rfc-editor.org/rfc/rfc7644
// [the contract]: https://github.com/idsauth/idsauth/blob/main/docs/CONTRACT.md
package scimerr

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
)

// Schema is the URI of the SCIM error message schema.
const Schema = "urn:ietf:params:scim:api:messages:2.0:Error"

// ContentType is the media type of SCIM bodies ([RFC 7644] §3.1).
//
// [RFC 7644]: https://www.rfc-editor.org/rfc/rfc7644
const ContentType = "application/scim+json"

// Type is a scimType detail error keyword ([RFC 7644] §3.12, Table 9). It
// is only ever sent with status 400.
//
// [RFC 7644]: https://www.rfc-editor.org/rfc/rfc7644
type Type string

// The scimType values of RFC 7644 Table 9.
const (
	InvalidFilter Type = "invalidFilter"
	TooMany       Type = "tooMany"
	Uniqueness    Type = "uniqueness"
	Mutability    Type = "mutability"
	InvalidSyntax Type = "invalidSyntax"
	InvalidPath   Type = "invalidPath"
	NoTarget      Type = "noTarget"
	InvalidValue  Type = "invalidValue"
	InvalidVers   Type = "invalidVers"
	Sensitive     Type = "sensitive"
)

// Error is a SCIM error. Its JSON form carries "status" as a string, as
// RFC 7644 requires.
type Error struct {
	Status   int    // HTTP status
	SCIMType Type   // only written when Status is 400
	Detail   string // human-readable; never put secrets here
}

// New returns an error with the given status and detail.
func New(status int, detail string) *Error { return &Error{Status: status, Detail: detail} }

// BadRequest returns a 400 error with a scimType.
func BadRequest(t Type, detail string) *Error {
	return &Error{Status: http.StatusBadRequest, SCIMType: t, Detail: detail}
}

// Unauthorized returns a 401 error.
func Unauthorized(detail string) *Error { return New(http.StatusUnauthorized, detail) }

// Forbidden returns a 403 error.
func Forbidden(detail string) *Error { return New(http.StatusForbidden, detail) }

// NotFound returns a 404 error.
func NotFound(detail string) *Error { return New(http.StatusNotFound, detail) }

// Conflict returns a 409 error, as for a userName that is already taken
// (RFC 7644 §3.3 pairs it with scimType "uniqueness", but scimType is only
// sent with 400, so the detail says it).
func Conflict(detail string) *Error { return New(http.StatusConflict, detail) }

// Internal returns a 500 error with a generic detail.
func Internal() *Error { return New(http.StatusInternalServerError, "internal server error") }

// Error returns the detail with the status, for logs.
func (e *Error) Error() string {
	s := "scim: " + strconv.Itoa(e.Status)
	if e.SCIMType != "" && e.Status == http.StatusBadRequest {
		s += " " + string(e.SCIMType)
	}
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	return s
}

type wireError struct {
	Schemas  []string `json:"schemas"`
	Status   string   `json:"status"`
	SCIMType Type     `json:"scimType,omitempty"`
	Detail   string   `json:"detail,omitempty"`
}

// MarshalJSON writes the RFC 7644 §3.12 form.
func (e *Error) MarshalJSON() ([]byte, error) {
	w := wireError{Schemas: []string{Schema}, Status: strconv.Itoa(e.Status), Detail: e.Detail}
	if e.Status == http.StatusBadRequest {
		w.SCIMType = e.SCIMType
	}
	return json.Marshal(w)
}

// UnmarshalJSON reads the RFC 7644 §3.12 form. It refuses a body whose
// schemas do not name the error schema or whose status is not a number in
// a string.
func (e *Error) UnmarshalJSON(b []byte) error {
	var w wireError
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	if len(w.Schemas) != 1 || w.Schemas[0] != Schema {
		return errors.New("scimerr: schemas is not [" + strconv.Quote(Schema) + "]")
	}
	status, err := strconv.Atoi(w.Status)
	if err != nil || status < 100 || status > 599 {
		return errors.New("scimerr: status is not an HTTP status in a string")
	}
	*e = Error{Status: status, SCIMType: w.SCIMType, Detail: w.Detail}
	return nil
}

// Write writes err as a SCIM error answer. An *Error (found with
// errors.As) is written as it is; any other error becomes a 500 whose
// detail says nothing of the internal message.
func Write(w http.ResponseWriter, err error) {
	var e *Error
	if !errors.As(err, &e) || e.Status < 400 || e.Status > 599 {
		e = Internal()
	}
	body, _ := json.Marshal(e) // an *Error always marshals
	h := w.Header()
	h.Set("Content-Type", ContentType)
	if e.Status == http.StatusUnauthorized || e.Status == http.StatusForbidden {
		h.Set("Cache-Control", "no-store")
	}
	w.WriteHeader(e.Status)
	_, _ = w.Write(append(body, '\n'))
}

// Handler adapts a handler that returns an error: a nil error means the
// handler has written its answer; any other is written with Write.
type Handler func(w http.ResponseWriter, r *http.Request) error

// ServeHTTP calls h and writes its error, if any.
func (h Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if err := h(w, r); err != nil {
		Write(w, err)
	}
}
