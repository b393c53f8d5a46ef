package main

import (
	"strings"
	"testing"
)

// TestBannerNamesTheIssuersAddress: the banner's "try it" lines name the
// example service at the address of the issuer the example takes tokens
// of, whatever -issuer says, never a port of its own.
func TestBannerNamesTheIssuersAddress(t *testing.T) {
	for issuer, want := range map[string]string{
		"http://127.0.0.1:8080/ids": "go run ./examplesvc -addr 127.0.0.1:8080",
		"http://127.0.0.1:9000/ids": "go run ./examplesvc -addr 127.0.0.1:9000",
	} {
		var b strings.Builder
		printBanner(&b, "127.0.0.1:50051", issuer)
		if !strings.Contains(b.String(), want) || (!strings.Contains(issuer, ":8080") && strings.Contains(b.String(), "8080")) {
			t.Errorf("-issuer %s: the banner\n%s\nwant %q", issuer, b.String(), want)
		}
	}
}
