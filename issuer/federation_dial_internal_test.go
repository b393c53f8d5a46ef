package issuer

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"testing"
)

// TestJWKSURIReachesOnlyPublicAddresses: a client's jwksUri is a URL the
// client chose, fetched from inside the operator's network, so the
// dialer connects only to a public unicast address: not RFC 1918 or 4193
// space, link-local (the cloud metadata address 169.254.169.254 and
// AWS's fd00:ec2::254), shared, benchmarking, NAT64 or reserved space,
// nor loopback unless the file allows it. The check is on the address
// dialled, after DNS: a name that resolves inside is refused the same.
func TestJWKSURIReachesOnlyPublicAddresses(t *testing.T) {
	for addr, public := range map[string]bool{
		"8.8.8.8": true, "1.1.1.1": true, "2001:4860:4860::8888": true, "93.184.215.14": true,
		"10.0.0.1": false, "172.16.5.4": false, "192.168.1.1": false, "fd12:3456::1": false,
		"169.254.169.254": false, "fd00:ec2::254": false, "fe80::1": false,
		"100.64.0.1": false, "198.18.0.1": false, "240.0.0.1": false, "255.255.255.255": false,
		"224.0.0.1": false, "ff02::1": false, "0.0.0.0": false, "::": false,
		"64:ff9b::a00:1": false, "64:ff9b:1::1": false,
		"127.0.0.1": false, "::1": false,
	} {
		if got := publicAddr(netip.MustParseAddr(addr), false); got != public {
			t.Errorf("publicAddr(%s) = %v, want %v", addr, got, public)
		}
	}
	for _, addr := range []string{"127.0.0.1", "::1"} {
		if !publicAddr(netip.MustParseAddr(addr), true) {
			t.Errorf("%s refused where the file allows loopback", addr)
		}
	}
	// The dialer refuses before it connects: an inner address given as
	// such, as an IPv4-mapped IPv6 one, or as a name that resolves to it.
	dial := dialPublic(false)
	for _, target := range []string{"10.0.0.1:443", "169.254.169.254:80", "[::ffff:127.0.0.1]:443", "[::ffff:10.1.2.3]:443", "localhost:443"} {
		conn, err := dial(context.Background(), "tcp", target)
		if err == nil {
			conn.Close()
			t.Errorf("dialled %s", target)
			continue
		}
		var ae *net.AddrError
		if !errors.As(err, &ae) {
			t.Errorf("%s: %v, want the dialer's *net.AddrError", target, err)
		}
	}
}
