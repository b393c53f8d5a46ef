package limit

import (
	"net/netip"
	"time"
)

// Config sets the failure limits of one authentication: the issuer's
// token, introspection and revocation endpoints (whose subjects are
// client IDs and API resources), or a middleware.SCIMAuth (whose subjects
// are tenants). The zero value takes the defaults.
//
// Failed authentications are limited before the secret is checked: each
// attempt reserves one failure from its budgets (see Store) and gives it
// back if the secret is right, so concurrent guesses cannot multiply a
// budget, and an attempt that was checked is charged even if its request
// ends early. An address is refused (429) once it has failed
// FailedAttemptsPerAddress times in the window, or once it has failed for
// a subject whose FailedAttemptsPerSubject are spent. Someone else's
// failures never lock a subject out of an address that gave its right
// secret within the last 24 hours (however many requests it has in
// flight), nor, while the store has room to remember it, out of an
// address that has not failed for it.
//
// What an attacker with N addresses (IPv4 addresses, or IPv6 /64s) can do
// in one window: verify at most FailedAttemptsPerSubject secrets for one
// subject from all of them together, plus one per address that the store
// can remember (half of MemoryBytes, 16 bytes an address, for a Memory:
// more addresses than that are refused, not forgotten), and at most
// N × FailedAttemptsPerAddress secrets in all. The attacker's own
// addresses are slowed.
type Config struct {
	// FailedAttemptsPerSubject is how many failed authentications one
	// subject may have within FailureWindow, from all addresses together,
	// before the addresses that failed for it are refused. Zero means 10.
	FailedAttemptsPerSubject int
	// FailedAttemptsPerAddress is how many failed authentications one
	// address may have within FailureWindow, for any subjects, before it
	// is refused. Zero means 100.
	FailedAttemptsPerAddress int
	// FailureWindow is the window of the two budgets: the allowance comes
	// back evenly over it. Zero means one minute.
	FailureWindow time.Duration
	// MemoryBytes is the memory of the budgets when they are kept in a
	// Memory of the caller's own (no shared Store is given), allocated
	// once: 16 bytes per remembered subject, address or pair, whatever the
	// subjects look like (they are hashed). When it is full, the entries
	// that free up soonest are forgotten first. Zero means 1 MiB (65,536
	// entries).
	MemoryBytes int

	// TrustedProxyHeader, when set (e.g. "X-Forwarded-For"), is where the
	// client's address is read from: the rightmost address in it not added
	// by a trusted hop (see TrustedProxies). Set it only behind a proxy
	// that sets the header, else clients choose their own address. Empty
	// means the connection's address (RemoteAddr). Addresses are keyed
	// without their port, and IPv6 by its /64. RFC 7239's "Forwarded",
	// whose form is not a list of addresses, is refused.
	TrustedProxyHeader string
	// TrustedProxies are the proxies whose entries in TrustedProxyHeader
	// are believed (an IPv4-mapped prefix is its IPv4 prefix). Empty means
	// one trusted hop: the header's rightmost address. Otherwise the
	// header is read only from a RemoteAddr in this list, and trusted
	// entries are skipped from the right. They need TrustedProxyHeader.
	TrustedProxies []netip.Prefix
	// NAT64Prefixes are the prefixes of the NAT64 or SIIT translators in
	// front of the service (RFC 6052: IPv6 prefixes of /32, /40, /48, /56,
	// /64 or /96 bits), such as 64:ff9b:1::/96 (RFC 8215's local-use
	// block): an address in one carries an IPv4 client's address, and is
	// keyed as that address. The well-known prefix 64:ff9b::/96 always
	// is. List only a translator's: whoever can source addresses in a
	// listed prefix chooses its key.
	NAT64Prefixes []netip.Prefix
}

// trustFor is how long an address that gave a subject's right secret
// stays trusted for it (Budget.Trust).
const trustFor = 24 * time.Hour

// Budget returns the budgets c sets, defaults applied, as a Request
// carries them to a Store.
func (c Config) Budget() Budget {
	b := Budget{PerSubject: c.FailedAttemptsPerSubject, PerAddress: c.FailedAttemptsPerAddress, Window: c.FailureWindow, Trust: trustFor}
	if b.PerSubject <= 0 {
		b.PerSubject = 10
	}
	if b.PerAddress <= 0 {
		b.PerAddress = 100
	}
	if b.Window <= 0 {
		b.Window = time.Minute
	}
	return b
}
