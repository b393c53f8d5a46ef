package accesstoken

import (
	"os"
	"regexp"
	"slices"
	"testing"
)

// TestCodesTable: every reason has its row, found for it whatever the
// order (a narrower reason before a wider one), and the codes are those
// ValidationError's documentation lists, in its order.
func TestCodesTable(t *testing.T) {
	var rows []string
	for _, r := range codes {
		if got := refused(r.err).Code; got != r.code {
			t.Errorf("%v: code %q, want its row's %q", r.err, got, r.code)
		}
		rows = append(rows, r.code)
	}
	src, err := os.ReadFile("errors.go")
	if err != nil {
		t.Fatal(err)
	}
	var documented []string
	for _, m := range regexp.MustCompile(`(?m)^//\t([a-z_]+)\s{2,}`).FindAllSubmatch(src, -1) {
		documented = append(documented, string(m[1]))
	}
	if !slices.Equal(rows, documented) {
		t.Errorf("the table's codes %q, the documentation's %q", rows, documented)
	}
}
