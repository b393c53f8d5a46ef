package limit

import (
	"testing"

	"github.com/idsauth/idsauth/internal/limiter"
)

// TestDocumentedValues: the constants written as literals, so that go doc
// shows their values, are the ones the limiter uses.
func TestDocumentedValues(t *testing.T) {
	if GoodFor != limiter.GoodFor || SteppedBack != limiter.SteppedBack || EntryBytes != limiter.EntryBytes {
		t.Errorf("limit says GoodFor %v, SteppedBack %v, EntryBytes %d; the limiter uses %v, %v, %d",
			GoodFor, SteppedBack, EntryBytes, limiter.GoodFor, limiter.SteppedBack, limiter.EntryBytes)
	}
}
