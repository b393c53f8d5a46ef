package scimerr_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/idsauth/idsauth/scimerr"
)

func TestWrite(t *testing.T) {
	cases := []struct {
		name string
		err  error
		want string
		code int
	}{
		{"400 keeps scimType", scimerr.BadRequest(scimerr.InvalidFilter, "bad filter"), `{"schemas":["urn:ietf:params:scim:api:messages:2.0:Error"],"status":"400","scimType":"invalidFilter","detail":"bad filter"}`, 400},
		{"401 never has scimType", &scimerr.Error{Status: 401, SCIMType: scimerr.InvalidValue, Detail: "no"}, `{"schemas":["urn:ietf:params:scim:api:messages:2.0:Error"],"status":"401","detail":"no"}`, 401},
		{"404", scimerr.NotFound("no such user"), `{"schemas":["urn:ietf:params:scim:api:messages:2.0:Error"],"status":"404","detail":"no such user"}`, 404},
		{"wrapped *Error is found", fmt.Errorf("lookup: %w", scimerr.Conflict("taken")), `{"schemas":["urn:ietf:params:scim:api:messages:2.0:Error"],"status":"409","detail":"taken"}`, 409},
		{"other errors become a 500 that leaks nothing", errors.New("pq: password authentication failed for user admin"), `{"schemas":["urn:ietf:params:scim:api:messages:2.0:Error"],"status":"500","detail":"internal server error"}`, 500},
		{"a non-error status becomes a 500", &scimerr.Error{Status: 200}, `{"schemas":["urn:ietf:params:scim:api:messages:2.0:Error"],"status":"500","detail":"internal server error"}`, 500},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			scimerr.Write(rec, c.err)
			if rec.Code != c.code {
				t.Errorf("status = %d, want %d", rec.Code, c.code)
			}
			if ct := rec.Header().Get("Content-Type"); ct != "application/scim+json" {
				t.Errorf("Content-Type = %q", ct)
			}
			if got := strings.TrimSpace(rec.Body.String()); got != c.want {
				t.Errorf("body = %s\nwant   %s", got, c.want)
			}
		})
	}
}

func TestRoundTrip(t *testing.T) {
	in := scimerr.BadRequest(scimerr.Uniqueness, "userName taken")
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	var out scimerr.Error
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	if out != *in {
		t.Fatalf("round trip: %+v != %+v", out, *in)
	}
	for _, bad := range []string{
		`{"schemas":["urn:other"],"status":"400"}`,
		`{"schemas":["urn:ietf:params:scim:api:messages:2.0:Error"],"status":400}`,
		`{"schemas":["urn:ietf:params:scim:api:messages:2.0:Error"],"status":"abc"}`,
	} {
		if err := json.Unmarshal([]byte(bad), &out); err == nil {
			t.Errorf("accepted %s", bad)
		}
	}
}

func ExampleHandler() {
	users := map[string]string{"42": "ada"}
	h := scimerr.Handler(func(w http.ResponseWriter, r *http.Request) error {
		name, ok := users[r.PathValue("id")]
		if !ok {
			return scimerr.NotFound("no user with that id")
		}
		_, err := fmt.Fprint(w, name)
		return err
	})
	mux := http.NewServeMux()
	mux.Handle("GET /Users/{id}", h)

	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, httptest.NewRequest("GET", "/Users/7", nil))
	fmt.Println(rec.Code, rec.Header().Get("Content-Type"))
	fmt.Print(rec.Body.String())
	// Output:
	// 404 application/scim+json
	// {"schemas":["urn:ietf:params:scim:api:messages:2.0:Error"],"status":"404","detail":"no user with that id"}
}

// Write answers with any error: a *scimerr.Error as it is, anything else
// as a 500 whose detail says nothing of the cause.
func ExampleWrite() {
	rec := httptest.NewRecorder()
	scimerr.Write(rec, scimerr.BadRequest(scimerr.InvalidValue, "userName is required"))
	fmt.Print(rec.Code, " ", rec.Body.String()) // the body ends in a newline

	rec = httptest.NewRecorder()
	scimerr.Write(rec, fmt.Errorf("database: connection to 10.0.0.5 refused"))
	fmt.Print(rec.Code, " ", rec.Body.String())
	// Output:
	// 400 {"schemas":["urn:ietf:params:scim:api:messages:2.0:Error"],"status":"400","scimType":"invalidValue","detail":"userName is required"}
	// 500 {"schemas":["urn:ietf:params:scim:api:messages:2.0:Error"],"status":"500","detail":"internal server error"}
}
