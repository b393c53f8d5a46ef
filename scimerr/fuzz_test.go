package scimerr_test

import (
	"encoding/json"
	"net/http/httptest"
	"testing"

	"github.com/idsauth/idsauth/scimerr"
)

func FuzzRoundTrip(f *testing.F) {
	f.Add(400, "invalidFilter", "bad filter")
	f.Add(401, "invalidValue", "")
	f.Add(200, "", "\x00\"\\")
	f.Add(999, "x", "y")
	f.Fuzz(func(t *testing.T, status int, scimType, detail string) {
		rec := httptest.NewRecorder()
		scimerr.Write(rec, &scimerr.Error{Status: status, SCIMType: scimerr.Type(scimType), Detail: detail})
		if rec.Header().Get("Content-Type") != scimerr.ContentType {
			t.Fatal("content type")
		}
		var got scimerr.Error
		if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
			t.Fatalf("written body does not parse: %v %q", err, rec.Body)
		}
		if got.Status != rec.Code {
			t.Fatalf("status %d in body, %d on the wire", got.Status, rec.Code)
		}
		if status < 400 || status > 599 {
			if got.Status != 500 || got.Detail != "internal server error" {
				t.Fatalf("invalid status %d written as %+v", status, got)
			}
			return
		}
		want := scimerr.Error{Status: status, Detail: detail}
		if status == 400 {
			want.SCIMType = scimerr.Type(scimType)
		}
		// JSON turns invalid UTF-8 into U+FFFD; compare after the same trip.
		b, _ := json.Marshal(want.Detail)
		_ = json.Unmarshal(b, &want.Detail)
		b, _ = json.Marshal(string(want.SCIMType))
		var st string
		_ = json.Unmarshal(b, &st)
		want.SCIMType = scimerr.Type(st)
		if got != want {
			t.Fatalf("round trip: %+v, want %+v", got, want)
		}
	})
}
