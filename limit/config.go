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
	// MemoryBytes is the memory of the budgets in a Memory of the caller's
	// own (no shared Store), 16 bytes an entry, those freeing up soonest
	// forgotten first when full. Zero means 1 MiB (65,536 entries).
	MemoryBytes int

	// TrustedProxyHeader ("X-Forwarded-For"), only behind a proxy that sets
	// it, is where the client's address is read ("Forwarded" is refused).
	// Empty means RemoteAddr. See docs/DEPLOYMENT.md.
	TrustedProxyHeader string
	// TrustedProxies are the proxies whose header entries are believed,
	// the header then read only from them. Empty means one trusted hop:
	// the rightmost entry. They need TrustedProxyHeader.
	TrustedProxies []netip.Prefix
	// NAT64Prefixes are the RFC 6052 prefixes of NAT64/SIIT translators in
	// front: an address in one is keyed as the IPv4 address it carries.
	// None: only the well-known 64:ff9b::/96 (docs/IDENTITY-SERVICE.md).
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
