package middleware

import (
	"errors"
	"regexp"
	"testing"

	"github.com/idsauth/idsauth/accesstoken"
)

var snakeCase = regexp.MustCompile(`^[a-z]+(_[a-z]+)*$`)

// TestReasonsTable: every reason this package reports has one row, and
// the row errors.Is finds for it is its own, so the order of the table
// cannot hide a reason behind a wider one.
func TestReasonsTable(t *testing.T) {
	all := []error{
		accesstoken.ErrTooLarge, accesstoken.ErrMalformed, accesstoken.ErrAlgorithm, accesstoken.ErrCritical, accesstoken.ErrType, accesstoken.ErrAmbiguousKey, accesstoken.ErrUnknownKey,
		accesstoken.ErrKeysUnavailable, accesstoken.ErrSignature, accesstoken.ErrExpired, accesstoken.ErrNotYetValid, accesstoken.ErrIssuedInFuture,
		accesstoken.ErrMissingClaim, accesstoken.ErrIssuer, accesstoken.ErrAudience, accesstoken.ErrScopeClaim, accesstoken.ErrScopeName, accesstoken.ErrBoundToken,
		accesstoken.ErrInactive, accesstoken.ErrIntrospectionUnavailable, ErrDPoPKey, ErrDPoPNonce, ErrDPoPProof, ErrUnboundToken,
		ErrNoToken, ErrMultipleHeaders, ErrSpaceInToken, ErrInsufficientScope, ErrNoClaims,
		ErrSCIMToken, ErrSCIMTooManyFailures,
	}
	if len(all) != len(reasons) {
		t.Fatalf("%d reasons, %d rows", len(all), len(reasons))
	}
	for _, err := range all {
		i := reasonRow(err)
		if i < 0 || reasons[i].err != err {
			t.Errorf("%v: found row %d", err, i)
		}
		if logReason(err) == genericWire {
			t.Errorf("%v: logged as the generic text", err)
		}
		if logReason(&accesstoken.ValidationError{Reason: err}) != logReason(err) {
			t.Errorf("%v: wrapped, it logs otherwise", err)
		}
	}
	codes := map[string]bool{"other": true}
	for _, r := range reasons {
		if !snakeCase.MatchString(r.code) || codes[r.code] {
			t.Errorf("%v: code %q is not snake case, or not unique", r.err, r.code)
		}
		codes[r.code] = true
		if ReasonCode(r.err) != r.code || ReasonCode(&accesstoken.ValidationError{Reason: r.err}) != r.code {
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
