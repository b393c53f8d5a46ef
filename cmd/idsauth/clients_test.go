package main

import (
	"encoding/json"
	"testing"
)

// TestASCIIJSON: what show prints is the same JSON, in ASCII alone: a
// bidirectional override, a line separator or an emoji of a stored
// configuration reaches the terminal escaped.
func TestASCIIJSON(t *testing.T) {
	in := map[string]any{"clientId": "a\u202eb", "config": map[string]any{"claims": []any{"x\u2028y", "😀", "ok"}}}
	raw, _ := json.MarshalIndent(in, "", "  ")
	out := asciiJSON(raw)
	for _, c := range out {
		if c > 0x7e || (c < 0x20 && c != '\n') {
			t.Fatalf("a byte %#x beyond printable ASCII in %s", c, out)
		}
	}
	var back map[string]any
	if err := json.Unmarshal(out, &back); err != nil {
		t.Fatal(err)
	}
	again, _ := json.MarshalIndent(back, "", "  ")
	if string(again) != string(raw) {
		t.Fatalf("not the same JSON:\n%s\n%s", again, raw)
	}
}
