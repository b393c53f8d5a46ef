package jws_test

import (
	"errors"
	"testing"

	"github.com/idsauth/idsauth/internal/jws"
)

// TestRedTeamUint53: what Uint53 takes as an epoch (idsauth_epoch): a
// whole number from 0 to 2^53-1 written plainly, absent and null as 0;
// nothing else, so that no JSON reader could read another number from
// the same bytes.
func TestRedTeamUint53(t *testing.T) {
	for _, c := range []struct {
		member string // the member's JSON, "" for none
		want   uint64
		ok     bool
	}{
		{"", 0, true},
		{`"e": null`, 0, true},
		{`"e": 0`, 0, true},
		{`"e": 7`, 7, true},
		{`"e":   9007199254740991  `, 1<<53 - 1, true},
		{`"e": 9007199254740992`, 0, false},
		{`"e": 18446744073709551616`, 0, false},
		{`"e": -1`, 0, false},
		{`"e": -0`, 0, false},
		{`"e": 1.0`, 0, false},
		{`"e": 1e3`, 0, false},
		{`"e": 01`, 0, false},
		{`"e": "7"`, 0, false},
		{`"e": true`, 0, false},
		{`"e": [7]`, 0, false},
		{`"e": {"n": 7}`, 0, false},
	} {
		payload := "{" + c.member + "}"
		claims, err := jws.ReadClaims([]byte(payload))
		if err != nil {
			if c.ok || !errors.Is(err, jws.ErrMalformed) {
				t.Errorf("%s: %v", payload, err)
			}
			continue // not JSON: no reader takes it
		}
		got, err := claims.Uint53("e")
		if (err == nil) != c.ok || got != c.want || (err != nil && !errors.Is(err, jws.ErrMalformed)) {
			t.Errorf("%s: %d %v, want %d ok %v", payload, got, err, c.want, c.ok)
		}
	}
	// A name given twice, by an escape, refuses the whole set.
	if _, err := jws.ReadClaims([]byte(`{"e": 1, "\u0065": 2}`)); !errors.Is(err, jws.ErrMalformed) {
		t.Errorf("an epoch named twice: %v", err)
	}
}
