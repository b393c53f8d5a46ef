package issuer

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"golang.org/x/time/rate"

	"github.com/idsauth/idsauth/internal/jwks"
	"github.com/idsauth/idsauth/internal/jws"
	"github.com/idsauth/idsauth/internal/keys"
	"github.com/idsauth/idsauth/internal/logevery"
	"github.com/idsauth/idsauth/observe"
)

// The key sets the issuer fetches, by the validator's rules (package
// internal/jwks): each trusted issuer's, from where the operator says,
// and each jwksUri client's. They are runtime state, kept apart from the
// compiled configuration, for the issuer's life: a set stays across
// reloads while its source stays the same, and goes when no
// configuration names it. None is fetched until a request needs it, and
// no request waits for a fetch longer than fetchWait.

// Bounds of the fetches.
const (
	fetchTimeout     = 10 * time.Second // one fetch, discovery and JWKS together
	fetchWait        = 3 * time.Second  // what a token request waits for one
	keysRefresh      = 5 * time.Minute  // a set this old is fetched again, behind the request
	maxIssuerKeys    = 100              // JWKs in a trusted issuer's set
	maxClientKeySet  = 16               // JWKs in a client's jwksUri set
	maxClientJWKS    = 64 << 10         // bytes of a client's jwksUri answer
	clientKIDRefetch = 30 * time.Second // a client's unknown kid fetches its set at most this often
)

// remoteKeys are the fetched key sets of an issuer.
type remoteKeys struct {
	mu      sync.Mutex
	issuers map[string]*fetched // by the source's key (trustedIssuer.key)
	clients map[string]*fetched // by client ID
}

// fetched is one fetched set, and what holds back the lines of its
// failed fetches.
type fetched struct {
	url    string // a client's jwksUri
	remote *jwks.Remote
	logged logevery.Limiter
}

// key is what names a trusted issuer's source among the fetched sets:
// everything that decides what is fetched and trusted.
func (ti *trustedIssuer) key() string {
	s := ti.source
	ca := sha256.Sum256(s.ca)
	return strings.Join([]string{ti.id, s.discovery, s.url, s.file, fmt.Sprint(s.bundle), s.tokenFile, hex.EncodeToString(ca[:]), ti.grace.String()}, "\x00")
}

// issuerKeys returns the fetched set of ti, made on first use.
func (iss *Issuer) issuerKeys(ti *trustedIssuer) *jwks.Remote {
	rk := &iss.remote
	k := ti.key()
	rk.mu.Lock()
	defer rk.mu.Unlock()
	if f := rk.issuers[k]; f != nil {
		return f.remote
	}
	if rk.issuers == nil {
		rk.issuers = map[string]*fetched{}
	}
	f := &fetched{}
	src := ti.source
	hc := jwks.Client(&http.Client{Transport: transport(src.ca, nil), CheckRedirect: noRedirects}, fetchTimeout, 0)
	rules := jwks.Rules{MaxKeys: maxIssuerKeys}
	if src.bundle {
		rules.SigUse = spiffeJWTUse
	}
	fetch := func(ctx context.Context) ([]jwks.Key, error) {
		switch {
		case src.file != "":
			data, err := readBounded(src.file)
			if err != nil {
				return nil, err
			}
			return jwks.Parse(data, rules)
		case src.discovery != "":
			doc, err := jwks.Discover(ctx, hc, src.discovery)
			if err != nil {
				return nil, err
			}
			if err := checkFetchURL(doc.JWKSURI, true); err != nil {
				return nil, fmt.Errorf("discovery: jwks_uri: %w", err)
			}
			return jwks.Fetch(ctx, hc, doc.JWKSURI, nil, rules)
		}
		var h http.Header
		if src.tokenFile != "" {
			tok, err := readBounded(src.tokenFile)
			if err != nil {
				return nil, err
			}
			h = http.Header{"Authorization": {"Bearer " + strings.TrimSpace(string(tok))}}
		}
		return jwks.Fetch(ctx, hc, src.url, h, rules)
	}
	r := jwks.NewRemote(jwks.RemoteConfig{
		Fetch: fetch, SigUse: rules.SigUse, Timeout: fetchTimeout, Wait: fetchWait, Refresh: keysRefresh, Grace: ti.grace, Now: iss.now,
		Fetched: func(ctx context.Context, n int, _ bool, err error) {
			iss.keysFetched(ctx, &f.logged, "trusted issuer", ti.id, n, err)
		},
		Expired: func() { iss.keysExpired("trusted issuer", ti.id, ti.grace) },
	})
	f.remote = r
	rk.issuers[k] = f
	return r
}

// spiffeJWTUse is the "use" of a SPIFFE bundle's JWT-SVID keys.
const spiffeJWTUse = "jwt-svid"

// clientKeys returns cl, a jwksUri client, with its keys for a's kid and
// alg from its fetched set, which a's kid unknown to it fetches again (at
// most once every clientKIDRefetch): a copy, for this request alone, so
// that the compiled roster stays plain data. A key that does not fit a's
// alg (keys.FitPublic), or an RSA key past keys.MaxRSABits, is left out.
// A client without jwksUri, or no assertion, is returned as it is.
func (iss *Issuer) clientKeys(q *request, cl *client) *client {
	a := q.assertion
	if cl == nil || cl.jwksURI == "" || a == nil {
		return cl
	}
	pubs, err := iss.clientSet(cl, q.st.trust.loopJWK).Keys(q.ctx, a.kid, a.alg)
	cp := cl.forRequest()
	cp.keys = nil
	if err != nil {
		return cp
	}
	for _, pub := range pubs {
		if keys.FitPublic(a.alg, pub) != nil {
			continue
		}
		if r, ok := pub.(*rsa.PublicKey); ok && r.N.BitLen() > keys.MaxRSABits {
			continue
		}
		cp.keys = append(cp.keys, clientKey{alg: a.alg, pub: pub})
	}
	return cp
}

// clientSet returns the fetched set of cl's jwksUri, made on first use,
// and anew when its URL changed.
func (iss *Issuer) clientSet(cl *client, loopback bool) *jwks.Remote {
	rk := &iss.remote
	rk.mu.Lock()
	defer rk.mu.Unlock()
	if cs := rk.clients[cl.id]; cs != nil && cs.url == cl.jwksURI {
		return cs.remote
	}
	if rk.clients == nil {
		rk.clients = map[string]*fetched{}
	}
	f := &fetched{url: cl.jwksURI}
	u := cl.jwksURI
	hc := jwks.Client(&http.Client{Transport: transport(nil, dialPublic(loopback)), CheckRedirect: noRedirects}, fetchTimeout, maxClientJWKS)
	rules := jwks.Rules{MaxKeys: maxClientKeySet}
	id := cl.id
	r := jwks.NewRemote(jwks.RemoteConfig{
		Fetch:   func(ctx context.Context) ([]jwks.Key, error) { return jwks.Fetch(ctx, hc, u, nil, rules) },
		Timeout: fetchTimeout, Wait: fetchWait, Refresh: keysRefresh, Grace: defaultKeysGrace, Now: iss.now,
		UnknownKID: newKIDLimiter(clientKIDRefetch),
		Fetched: func(ctx context.Context, n int, _ bool, err error) {
			iss.keysFetched(ctx, &f.logged, "client jwksUri", id, n, err)
		},
		Expired: func() { iss.keysExpired("client jwksUri", id, defaultKeysGrace) },
	})
	f.remote = r
	rk.clients[cl.id] = f
	return r
}

// keep drops the fetched sets that st no longer names: a trusted issuer
// gone or changed, a client gone or without its jwksUri.
func (rk *remoteKeys) keep(st *state) {
	rk.mu.Lock()
	defer rk.mu.Unlock()
	live := map[string]bool{}
	for _, ti := range st.trust.issuers {
		live[ti.key()] = true
	}
	for k := range rk.issuers {
		if !live[k] {
			delete(rk.issuers, k)
		}
	}
	for id, cs := range rk.clients {
		if cl := st.client(id); cl == nil || cl.jwksURI != cs.url {
			delete(rk.clients, id)
		}
	}
}

// keysFetched reports a fetch of a set: an event, and for a failure a
// Warn line, at most one per logevery.Interval for each source (held
// back by logged).
func (iss *Issuer) keysFetched(ctx context.Context, logged *logevery.Limiter, what, who string, n int, err error) {
	if err == nil {
		if iss.observer != nil {
			iss.observer.Observe(ctx, observe.Event{Kind: observe.KeysFetched, Keys: n})
		}
		return
	}
	if iss.observer != nil {
		iss.observer.Observe(ctx, observe.Event{Kind: observe.KeysFetchFailed, Reason: jwks.Failure(err)})
	}
	if ok, held := logged.Allow(iss.now()); ok {
		iss.logger.Warn("idsauth issuer: keys cannot be fetched; the keys fetched last keep verifying until their grace ends",
			slog.String("source", what), slog.String("name", who), slog.String("error", err.Error()), slog.Uint64("suppressed", held))
	}
}

// keysExpired reports that a set outlived its grace: its tokens are
// refused until a fetch succeeds.
func (iss *Issuer) keysExpired(what, who string, grace time.Duration) {
	if iss.observer != nil {
		iss.observer.Observe(context.Background(), observe.Event{Kind: observe.KeysFetchFailed, Reason: "stale"})
	}
	iss.logger.Error("idsauth issuer: no fetch of these keys succeeded within their grace: the tokens they verified are refused (invalid_client) until one does",
		slog.String("source", what), slog.String("name", who), slog.Duration("grace", grace))
}

// readBounded reads a file of at most jwks.MaxDocument bytes: a bundle,
// a pod's token.
func readBounded(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, jwks.MaxDocument+1))
	if err == nil && len(data) > jwks.MaxDocument {
		err = fmt.Errorf("%s: %w", path, jwks.ErrTooLarge)
	}
	return data, err
}

// noRedirects refuses every redirect: a key source answers where it was
// asked, so that no redirect takes a fetch where the operator did not
// send it.
func noRedirects(*http.Request, []*http.Request) error { return errRedirect }

var errRedirect = errors.New("a key source answered with a redirect, which is not followed")

// transport is a transport for a key source: with ca's CAs (PEM; nil:
// the system's), and dial, when set, as its dialer (and no proxy).
func transport(ca []byte, dial func(ctx context.Context, network, addr string) (net.Conn, error)) *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	if len(ca) > 0 {
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(ca)
		t.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	if dial != nil {
		t.Proxy, t.DialContext = nil, dial
	}
	return t
}

// dialPublic is the dialer of a client's jwksUri: it connects only to a
// public unicast address (and to loopback when loopback), checked on the
// address it connects to, after any DNS answer, so that a name that
// resolves to an inner address, or comes to (DNS rebinding), reaches
// nothing inside. No proxy: a proxy would connect where this cannot see.
func dialPublic(loopback bool) func(ctx context.Context, network, addr string) (net.Conn, error) {
	d := &net.Dialer{Timeout: fetchTimeout, Control: func(_, address string, _ syscall.RawConn) error {
		ap, err := netip.ParseAddrPort(address)
		if err != nil {
			return err
		}
		if !publicAddr(ap.Addr().Unmap(), loopback) {
			return &net.AddrError{Err: "not a public address: a client's jwksUri reaches only the internet", Addr: ap.Addr().String()}
		}
		return nil
	}}
	return d.DialContext
}

// innerPrefixes are the ranges a client's jwksUri never reaches beside
// netip's own classes: shared address space (RFC 6598), benchmarking (RFC
// 2544), NAT64 (RFC 6052, 8215), and IPv4's reserved 240/4.
var innerPrefixes = []netip.Prefix{
	netip.MustParsePrefix("100.64.0.0/10"),
	netip.MustParsePrefix("198.18.0.0/15"),
	netip.MustParsePrefix("64:ff9b::/96"),
	netip.MustParsePrefix("64:ff9b:1::/48"),
	netip.MustParsePrefix("240.0.0.0/4"),
}

// publicAddr reports whether a is an address a client's jwksUri may
// reach: a global unicast one, not private (RFC 1918, RFC 4193), nor of
// innerPrefixes; or loopback, when loopback.
func publicAddr(a netip.Addr, loopback bool) bool {
	if a.IsLoopback() {
		return loopback
	}
	if !a.IsGlobalUnicast() || a.IsPrivate() {
		return false
	}
	for _, p := range innerPrefixes {
		if p.Contains(a) {
			return false
		}
	}
	return true
}

// loadTrust reads the files of t's sources that New and Reload read:
// each CA (a trust anchor of the operator's), and each bundle file once,
// so that a file that cannot be read or holds no bundle fails the load.
func (t *trust) load(dir string) error {
	for i, ti := range t.issuers {
		f := fmt.Sprintf("trustedIssuers[%d]", i)
		src := &ti.source
		if src.caFile != "" {
			path, data, err := readFile(dir, src.caFile)
			if err != nil {
				return causeErr(f+".caFile", err)
			}
			if !x509.NewCertPool().AppendCertsFromPEM(data) {
				return fieldErr(f+".caFile", "%s holds no PEM certificate", path)
			}
			src.ca = data
		}
		if src.file != "" {
			path, data, err := readFile(dir, src.file)
			if err != nil {
				return causeErr(f+".bundleFile", err)
			}
			if _, err := jwks.Parse(data, jwks.Rules{SigUse: spiffeJWTUse, MaxKeys: maxIssuerKeys}); err != nil {
				return fieldErr(f+".bundleFile", "%s: %v", path, err)
			}
			src.file = path
		}
	}
	return nil
}

// newKIDLimiter allows one fetch for an unknown kid every d.
func newKIDLimiter(d time.Duration) *rate.Limiter { return rate.NewLimiter(rate.Every(d), 1) }

// verifyWith checks a's signature with one of pubs, each of the type
// of a's alg: the table's algorithms (jws.Verify), and ES384, which AWS
// STS signs with, off the table of the issuer's own.
func verifyWith(a *assertion, pubs []crypto.PublicKey) bool {
	for _, pub := range pubs {
		if a.alg == "ES384" {
			if ec, ok := pub.(*ecdsa.PublicKey); ok && ec.Curve == elliptic.P384() && jwt.SigningMethodES384.Verify(a.signed, a.sig, ec) == nil {
				return true
			}
			continue
		}
		if r, ok := pub.(*rsa.PublicKey); ok && (r.N.BitLen() < keys.MinRSABits || r.N.BitLen() > 8192) {
			continue // a weak key, or one whose check costs too much
		}
		if jws.Verify(a.alg, a.signed, a.sig, pub) == nil {
			return true
		}
	}
	return false
}
