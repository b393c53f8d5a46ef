package issuer_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/idsauth/idsauth/issuer"
	"github.com/idsauth/idsauth/secret"
)

// TestDecodeErrorsNameTheirPlace: an unknown field or a value of the
// wrong type anywhere in the file is named by its place, with the client's
// ID for a client, and LoadConfig names the file: "json: unknown field
// "scope"" alone told neither which client nor which file.
func TestDecodeErrorsNameTheirPlace(t *testing.T) {
	h := secret.HashSHA256("s").String()
	client := func(id, extra string) string {
		return `{"clientId":"` + id + `","secretHashes":["` + h + `"],"scopes":["pd_AdminWebApi"]` + extra + `}`
	}
	head := `{"issuer":"http://h/ids","ephemeralKey":true,`
	for _, c := range []struct {
		name, json, field, reason string
	}{
		{"a client's unknown field", head + `"clients":[` + client("a", "") + `,` + client("b", "") + `,` + client("reporting", `,"scope":["x"]`) + `]}`, `clients[2] ("reporting")`, `unknown field "scope"`},
		{"before its clientId", head + `"clients":[{"scope":"x","clientId":"late","scopes":[]}]}`, `clients[0] ("late")`, `unknown field "scope"`},
		{"a key's unknown field", head + `"clients":[],"keys":[{"file":"a.pem","signsAt":"x"}]}`, "keys[0]", `unknown field "signsAt"`},
		{"a public key's unknown field", head + `"clients":[` + client("k", `,"publicKeys":[{"file":"x.pem","algo":"ES256"}]`) + `]}`, `clients[0] ("k").publicKeys[0]`, `unknown field "algo"`},
		{"an unknown field in limits", head + `"clients":[],"limits":{"maxBody":1}}`, "limits", `unknown field "maxBody"`},
		{"an unknown field at the top", head + `"clients":[],"colour":"red"}`, "(file)", `unknown field "colour"`},
		{"a field known elsewhere", head + `"clients":[],"limits":{"clientId":"x"}}`, "limits", `unknown field "clientId"`},
		{"a wrong type in a client", head + `"clients":[` + client("a", "") + `,` + client("b", `,"accessTokenLifetime":"an hour"`) + `]}`, `clients[1] ("b").accessTokenLifetime`, "wrong type"},
		{"a wrong type in limits", head + `"clients":[],"limits":{"failureWindowSeconds":true}}`, "limits.failureWindowSeconds", "wrong type"},
	} {
		_, err := issuer.ParseConfig([]byte(c.json), "", nil)
		var ce *issuer.ConfigError
		if !errors.As(err, &ce) || ce.Field != c.field || !strings.Contains(ce.Reason, c.reason) {
			t.Errorf("%s: %v; want field %s, reason %q", c.name, err, c.field, c.reason)
		}
	}

	// A file with a section of a service's own.
	var tenants []struct {
		Tenant string `json:"tenant"`
	}
	_, err := issuer.ParseConfig([]byte(head+`"clients":[],"scimTenants":[{"tenant":"a"},{"tenant":"b","tokens":[]}]}`), "", map[string]any{"scimTenants": &tenants})
	if ce := (*issuer.ConfigError)(nil); !errors.As(err, &ce) || ce.Field != "scimTenants[1]" || ce.Reason != `unknown field "tokens"` {
		t.Errorf("a section's unknown field: %v, want field scimTenants[1], unknown field \"tokens\"", err)
	}

	file := filepath.Join(t.TempDir(), "idsauth.json")
	if err := os.WriteFile(file, []byte(head+`"clients":[`+client("reporting", `,"scope":["x"]`)+`]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = issuer.LoadConfig(file)
	if want := `issuer config: ` + file + `: clients[0] ("reporting"): unknown field "scope" (did you mean "scopes"?)`; err == nil || err.Error() != want {
		t.Errorf("LoadConfig: %v\nwant %s", err, want)
	}
}

// TestDecodeSuggestsTheNearestField: an unknown field that comes near a
// field of its object (a letter off, another case, "_" for camel case)
// names it; one that comes near none, or near a field of another object
// only, suggests nothing.
func TestDecodeSuggestsTheNearestField(t *testing.T) {
	head := `{"issuer":"http://h/ids","ephemeralKey":true,`
	for _, c := range []struct {
		name, json, field, reason string
	}{
		{"a letter off", head + `"clients":[{"clientId":"a","scope":["x"]}]}`, `clients[0] ("a")`, `unknown field "scope" (did you mean "scopes"?)`},
		{"snake case", head + `"clients":[{"client_id":"a"}]}`, `clients[0]`, `unknown field "client_id" (did you mean "clientId"?)`},
		{"two letters off a long name", head + `"clients":[{"clientId":"a","secretHash":["x"]}]}`, `clients[0] ("a")`, `unknown field "secretHash" (did you mean "secretHashes"?)`},
		{"at the top", head + `"client":[]}`, "(file)", `unknown field "client" (did you mean "clients"?)`},
		{"in limits", head + `"clients":[],"limits":{"trustedProxy":["10.0.0.1"]}}`, "limits", `(did you mean "trustedProxies"?)`},
		{"near nothing", head + `"clients":[],"colour":"red"}`, "(file)", `unknown field "colour"`},
		{"near a field of another object only", head + `"clients":[],"limits":{"clientID":"x"}}`, "limits", `unknown field "clientID"`},
	} {
		_, err := issuer.ParseConfig([]byte(c.json), "", nil)
		var ce *issuer.ConfigError
		if !errors.As(err, &ce) || ce.Field != c.field || !strings.HasSuffix(ce.Reason, c.reason) {
			t.Errorf("%s: %v; want field %s, reason ending %q", c.name, err, c.field, c.reason)
		}
		if c.name == "near nothing" || c.name == "near a field of another object only" {
			if ce != nil && strings.Contains(ce.Reason, "did you mean") {
				t.Errorf("%s: %v suggests a field", c.name, err)
			}
		}
	}
	// A section of a service's own is suggested too.
	var store *struct{}
	_, err := issuer.ParseConfig([]byte(head+`"clients":[],"token_store":{}}`), "", map[string]any{"tokenStore": &store})
	if err == nil || !strings.HasSuffix(err.Error(), `unknown field "token_store" (did you mean "tokenStore"?)`) {
		t.Errorf("an embedding type's section: %v", err)
	}
}

// TestDecodeRefusesWhatFollowsTheObject: a "}" too many closes the
// object early; what follows it (the sections after it) is refused, with
// its line, not dropped. White space after the object is fine.
func TestDecodeRefusesWhatFollowsTheObject(t *testing.T) {
	good := "{\n  \"issuer\": \"http://h/ids\",\n  \"ephemeralKey\": true,\n  \"clients\": []\n}\n"
	if _, err := issuer.ParseConfig([]byte(good+"\n \t\r\n"), "", nil); err != nil {
		t.Fatalf("white space after the object: %v", err)
	}
	for _, c := range []struct {
		name, json, where string
	}{
		{"a stray brace before a section", "{\n  \"issuer\": \"http://h/ids\",\n  \"ephemeralKey\": true,\n  \"clients\": []},\n  \"limits\": {\"failureWindowSeconds\": 60}\n}\n", "line 4, column 17: something follows the configuration object, which ends at line 4, column 16"},
		{"a brace too many at the end", good + "}\n", "line 6, column 1: something follows the configuration object, which ends at line 5, column 1"},
		{"a second object", good + "{}", "line 6, column 1: more than one JSON value"},
		{"text", good + "  x", "line 6, column 3:"},
		{"columns count characters", `{"issuer": "http://é/ids", "ephemeralKey": true, "clients": []}, "limits": {}}`, "line 1, column 64: something follows the configuration object, which ends at line 1, column 63"},
	} {
		_, err := issuer.ParseConfig([]byte(c.json), "", nil)
		var ce *issuer.ConfigError
		if !errors.As(err, &ce) || ce.Field != "(file)" || !strings.HasPrefix(ce.Reason, c.where) {
			t.Errorf("%s: %v; want (file): %s...", c.name, err, c.where)
		}
	}
}
