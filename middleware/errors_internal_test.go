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
// codes and its own errors, has the row of its code, and nothing else
// has one; a foreign error's text reaches neither the wire nor the log.
func TestReasonsTable(t *testing.T) {
	own := []error{
		errDPoPKey, errDPoPNonce, errDPoPProof, proofFailure("its jti was already used", errors.New("cause")),
		errNoToken, errMultipleHeaders, errSpaceInToken, errInsufficientScope,
		errSCIMToken, errSCIMTooManyFailures, errGateAssertion,
	}
	rows := map[string]bool{}
	for _, code := range validationCodes(t) {
		rows[code] = true
		ve := &accesstoken.ValidationError{Code: code}
		if _, ok := reasons[code]; !ok {
			t.Errorf("%s: no row", code)
		}
		if logReason(ve) == genericWire || describe(ve) == genericWire && code != "no_claims" {
			t.Errorf("%s: described or logged as the generic text", code)
		}
		if accesstoken.ReasonCode(ve) != code {
			t.Errorf("%s: ReasonCode is %q", code, accesstoken.ReasonCode(ve))
		}
	}
	for _, err := range own {
		code := accesstoken.ReasonCode(err)
		rows[code] = true
		if _, ok := reasons[code]; !ok {
			t.Errorf("%v: code %q has no row", err, code)
		}
		if logReason(err) == genericWire {
			t.Errorf("%v: logged as the generic text", err)
		}
	}
	if accesstoken.ReasonCode(own[3]) != "dpop_proof" || describe(own[3]) != "invalid DPoP proof: its jti was already used" {
		t.Errorf("a failed proof: code %q, described %q", accesstoken.ReasonCode(own[3]), describe(own[3]))
	}
	for code := range reasons {
		if !snakeCase.MatchString(code) || code == "other" || !rows[code] {
			t.Errorf("row %q: not snake case, or of no reason", code)
		}
	}
	if accesstoken.ReasonCode(errors.New("token abc.def.ghi")) != "other" || accesstoken.ReasonCode(nil) != "other" {
		t.Error("a foreign error has a code of its own")
	}
	if describe(errors.New("a user's validator says: token abc.def.ghi")) != genericWire ||
		logReason(errors.New("token abc.def.ghi")) != genericWire {
		t.Error("a foreign error's text reaches the wire or the log")
	}
}
