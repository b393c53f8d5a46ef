package middleware

import (
	"errors"
	"testing"
)

// TestReasonsTable: every reason this package reports has one row, and
// the row errors.Is finds for it is its own, so the order of the table
// cannot hide a reason behind a wider one.
func TestReasonsTable(t *testing.T) {
	all := []error{
		ErrTooLarge, ErrMalformed, ErrAlgorithm, ErrCritical, ErrType, ErrUnknownKey,
		ErrKeysUnavailable, ErrSignature, ErrExpired, ErrNotYetValid, ErrIssuedInFuture,
		ErrMissingClaim, ErrIssuer, ErrAudience, ErrScopeClaim, ErrScopeName, ErrBoundToken,
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
		if logReason(&ValidationError{Reason: err}) != logReason(err) {
			t.Errorf("%v: wrapped, it logs otherwise", err)
		}
	}
	if describe(errors.New("a user's validator says: token abc.def.ghi")) != genericWire ||
		logReason(errors.New("token abc.def.ghi")) != genericWire {
		t.Error("a foreign error's text reaches the wire or the log")
	}
}
