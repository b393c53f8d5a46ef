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
		_, err := issuer.ParseConfig([]byte(c.json), "")
		var ce *issuer.ConfigError
		if !errors.As(err, &ce) || ce.Field != c.field || !strings.Contains(ce.Reason, c.reason) {
			t.Errorf("%s: %v; want field %s, reason %q", c.name, err, c.field, c.reason)
		}
	}

	// A file of a service of its own, that embeds Config.
	var own struct {
		issuer.Config
		Tenants []struct {
			Tenant string `json:"tenant"`
		} `json:"scimTenants"`
	}
	err := issuer.DecodeConfig([]byte(head+`"clients":[],"scimTenants":[{"tenant":"a"},{"tenant":"b","tokens":[]}]}`), &own)
	if ce := (*issuer.ConfigError)(nil); !errors.As(err, &ce) || ce.Field != "scimTenants[1]" {
		t.Errorf("an embedding type's unknown field: %v, want field scimTenants[1]", err)
	}

	file := filepath.Join(t.TempDir(), "idsauth.json")
	if err := os.WriteFile(file, []byte(head+`"clients":[`+client("reporting", `,"scope":["x"]`)+`]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = issuer.LoadConfig(file)
	if want := `issuer config: ` + file + `: clients[0] ("reporting"): unknown field "scope"`; err == nil || err.Error() != want {
		t.Errorf("LoadConfig: %v\nwant %s", err, want)
	}
}
