package rpcauth

import (
	"net"
	"strings"
)

// Loopback reports whether hostport ("host", "host:port", "[::1]:port")
// names this machine: "localhost", or an IP address in 127.0.0.0/8 or
// ::1. Only a literal address or "localhost" counts: any other name could
// resolve elsewhere.
func Loopback(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
