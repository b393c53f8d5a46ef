// Package dpoptest makes the middleware's DPoP for the tests of this
// repository's packages.
package dpoptest

import (
	"testing"

	"github.com/idsauth/idsauth/middleware"
)

// New makes a middleware.DPoP for cfg or fails the test.
func New(t testing.TB, cfg middleware.DPoPConfig) *middleware.DPoP {
	t.Helper()
	d, err := middleware.NewDPoP(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return d
}
