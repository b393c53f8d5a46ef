package main

import (
	"strings"
	"testing"

	"github.com/idsauth/idsauth/issuer"
)

// TestMTLSWarnings: serve warns, at start, of mutual TLS settings that
// may not work, and of nothing else; it never refuses them.
func TestMTLSWarnings(t *testing.T) {
	alias := issuer.MTLSConfig{Alias: "https://mtls.example.com/ids"}
	for _, c := range []struct {
		name  string
		flags mtlsFlags
		cfg   issuer.MTLSConfig
		want  []string // a part of each warning, in order
	}{
		{"-mtls-addr and an alias", mtlsFlags{addr: ":8443"}, alias, nil},
		{"-mtls-addr without an alias", mtlsFlags{addr: ":8443"}, issuer.MTLSConfig{}, []string{"names no mtls.alias"}},
		{"an alias without -mtls-addr", mtlsFlags{}, alias, []string{"mtls.alias is https://mtls.example.com/ids, but this process serves no -mtls-addr"}},
		{"-client-ca where nothing asks", mtlsFlags{clientCA: "ca.pem"}, issuer.MTLSConfig{}, []string{"-client-ca is given, but no listener asks"}},
		{"-client-ca with -client-auth request", mtlsFlags{clientCA: "ca.pem", clientAuth: "request"}, issuer.MTLSConfig{}, nil},
		{"-client-ca on -mtls-addr", mtlsFlags{clientCA: "ca.pem", addr: ":8443"}, alias, nil},
		{"nothing", mtlsFlags{}, issuer.MTLSConfig{}, nil},
	} {
		got := c.flags.warnings(c.cfg)
		ok := len(got) == len(c.want)
		for i := 0; ok && i < len(got); i++ {
			ok = strings.Contains(got[i], c.want[i])
		}
		if !ok {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}
