package middleware

import (
	"errors"
	"os"
	"regexp"
	"testing"

	"github.com/idsauth/idsauth/accesstoken"
)

var snakeCase = regexp.MustCompile(`^[a-z]+(_[a-z]+)*$`)

// validationCodes are the codes accesstoken documents for a
// ValidationError, read from its source: the codes of the type's
// comment, one a line.
func validationCodes(t *testing.T) []string {
	t.Helper()
	src, err := os.ReadFile("../accesstoken/errors.go")
	if err != nil {
		t.Fatal(err)
	}
	var codes []string
	for _, m := range regexp.MustCompile(`(?m)^//\t([a-z_]+)\s{2,}`).FindAllSubmatch(src, -1) {
		codes = append(codes, string(m[1]))
	}
	if len(codes) < 20 {
		t.Fatalf("read %d codes from accesstoken's documentation", len(codes))
	}
	return codes
}

// TestReasonsTable: every reason this package reports, accesstoken's
// codes and its own errors, has one row, and the row found for it is its
// own, so the order of the table cannot hide a reason behind a wider one.
func TestReasonsTable(t *testing.T) {
	own := []error{
		errDPoPKey, errDPoPNonce, errDPoPProof,
		errNoToken, errMultipleHeaders, errSpaceInToken, errInsufficientScope, errNoClaims,
		ErrSCIMToken, ErrSCIMTooManyFailures,
	}
	codes := validationCodes(t)
	if len(own)+len(codes) != len(reasons) {
		t.Fatalf("%d reasons, %d rows", len(own)+len(codes), len(reasons))
	}
	for _, code := range codes {
		ve := &accesstoken.ValidationError{Code: code}
		i := reasonRow(ve)
		if i < 0 || reasons[i].code != code || reasons[i].err != nil {
			t.Errorf("%s: found row %d", code, i)
		}
		if logReason(ve) == genericWire || describe(ve) == genericWire && code != "no_claims" {
			t.Errorf("%s: described or logged as the generic text", code)
		}
		if ReasonCode(ve) != code {
			t.Errorf("%s: ReasonCode is %q", code, ReasonCode(ve))
		}
	}
	for _, err := range own {
		i := reasonRow(err)
		if i < 0 || reasons[i].err != err {
			t.Errorf("%v: found row %d", err, i)
		}
		if logReason(err) == genericWire {
			t.Errorf("%v: logged as the generic text", err)
		}
	}
	seen := map[string]bool{"other": true}
	for _, r := range reasons {
		if !snakeCase.MatchString(r.code) || seen[r.code] {
			t.Errorf("%v: code %q is not snake case, or not unique", r.err, r.code)
		}
		seen[r.code] = true
		if r.err != nil && ReasonCode(r.err) != r.code {
			t.Errorf("%v: ReasonCode is not its row's code", r.err)
		}
	}
	if ReasonCode(errors.New("token abc.def.ghi")) != "other" || ReasonCode(nil) != "other" {
		t.Error("a foreign error has a code of its own")
	}
	if describe(errors.New("a user's validator says: token abc.def.ghi")) != genericWire ||
		logReason(errors.New("token abc.def.ghi")) != genericWire {
		t.Error("a foreign error's text reaches the wire or the log")
	}
}
