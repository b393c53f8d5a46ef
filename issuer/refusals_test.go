package issuer

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/idsauth/idsauth/internal/oauthwire"
)

// TestRefusalTable: every refusal has a row with a status and a code, a
// description takes at most one argument, and its body is what
// encoding/json writes for oauthwire.Error, under both profiles.
func TestRefusalTable(t *testing.T) {
	for id := notRefused + 1; id < numRefusals; id++ {
		r := refusals[id]
		if r.status == 0 || r.code == "" || strings.Count(r.desc, "%s") > 1 {
			t.Errorf("refusal %d: %+v", id, r)
		}
		for _, ids := range []bool{false, true} {
			no := refuseWith(id, `a "quoted" <arg>`)
			a := no.answer(ids, true)
			want, err := json.Marshal(oauthwire.Error{Code: a.code, Description: strings.Replace(a.desc, "%s", no.arg, 1)})
			if err != nil {
				t.Fatal(err)
			}
			if got := string(a.appendBody(nil)); got != string(want)+"\n" {
				t.Errorf("refusal %d (identityserver %v): %s, want %s", id, ids, got, want)
			}
		}
	}
}

// TestRefusalsAllocateNothing: answering a refusal under either profile,
// its body written into a buffer of the pool's, allocates nothing: the
// profile is a rule and a few rows, not a rewrite of the answer.
func TestRefusalsAllocateNothing(t *testing.T) {
	buf := make([]byte, 0, 1024)
	for id := notRefused + 1; id < numRefusals; id++ {
		for _, ids := range []bool{false, true} {
			no := &refusal{id: id, arg: "x", retry: 3}
			if n := testing.AllocsPerRun(100, func() {
				a := no.answer(ids, true)
				buf = a.appendBody(buf[:0])
			}); n != 0 {
				t.Errorf("refusal %d (identityserver %v): %v allocations", id, ids, n)
			}
		}
	}
}
