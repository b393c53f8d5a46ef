package secret_test

import (
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/idsauth/idsauth/secret"
)

func TestParseAndVerify(t *testing.T) {
	bc, err := secret.HashBcrypt("pw", 4)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, hash, secret string
		want               bool
	}{
		// The IdentityServer form: base64 of SHA-256 of "secret".
		{"sha256 IdentityServer form", "sha256:K7gNU3sdo+OL0wNhqoVWhr3g6s1xYv72ol/pe/Unols=", "secret", true},
		{"sha256 wrong", "sha256:K7gNU3sdo+OL0wNhqoVWhr3g6s1xYv72ol/pe/Unols=", "Secret", false},
		{"sha512", "sha512:vSsar3708Jvp9Szi2NWZZ02Bqp1qRCFpbcTZPdBhnWgs5WtNZKnvCXdhztmeD2cmW192CF5bDufKRpayrW/isg==", "secret", true},
		{"bcrypt", bc.String(), "pw", true},
		{"bcrypt wrong", bc.String(), "pW", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h, err := secret.Parse(c.hash)
			if err != nil {
				t.Fatal(err)
			}
			if h.Verify(c.secret) != c.want {
				t.Fatalf("Verify = %v", !c.want)
			}
			if h.String() != c.hash {
				t.Fatalf("String = %q", h.String())
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	for s, want := range map[string]error{
		"hunter2":            secret.ErrPlainText,
		"md5:abc":            secret.ErrPlainText,
		"sha256:abc":         secret.ErrMalformed,
		"sha256:" + b(64):    secret.ErrMalformed,
		"sha512:" + b(32):    secret.ErrMalformed,
		"bcrypt:$2a$nothing": secret.ErrMalformed,
	} {
		_, err := secret.Parse(s)
		if !errors.Is(err, want) {
			t.Errorf("%q: err = %v, want %v", s, err, want)
		}
		if strings.Contains(fmt.Sprint(err), "hunter2") {
			t.Error("error echoes the value")
		}
	}
}

// b returns the base64 of n zero bytes.
func b(n int) string { return base64.StdEncoding.EncodeToString(make([]byte, n)) }

func TestGenerate(t *testing.T) {
	s1, h1 := secret.Generate()
	s2, _ := secret.Generate()
	if len(s1) != 43 || s1 == s2 {
		t.Fatalf("secrets %q %q", s1, s2)
	}
	if !h1.Verify(s1) {
		t.Fatal("hash does not match its secret")
	}
}

func ExampleGenerate() {
	plain, hash := secret.Generate()
	// Give plain to the client once; put hash in the configuration file.
	fmt.Println(len(plain), strings.HasPrefix(hash.String(), "sha256:"), hash.Verify(plain))
	// Output: 43 true true
}

// Parse reads a hash from a configuration file; a value pasted in plain
// text is refused, and the error never repeats it.
func ExampleParse() {
	h, err := secret.Parse("sha256:K7gNU3sdo+OL0wNhqoVWhr3g6s1xYv72ol/pe/Unols=")
	fmt.Println(h.Kind(), err, h.Verify("secret"))

	_, err = secret.Parse("hunter2")
	fmt.Println(errors.Is(err, secret.ErrPlainText), strings.Contains(err.Error(), "hunter2"))
	// Output:
	// sha256 <nil> true
	// true false
}
