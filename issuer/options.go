package issuer

import (
	"context"
	"log/slog"
	"time"

	"github.com/idsauth/idsauth/limit"
	"github.com/idsauth/idsauth/secret"
	"github.com/idsauth/idsauth/tokenstore"
)

// Option configures what an Issuer keeps for its whole life, whatever
// configuration it is given: see WithLogger, WithClock, WithObserver,
// WithVerifier and WithLimiterStore.
type Option func(*Issuer)

// WithLogger sets the logger of every line the issuer writes: refused
// requests (Info), a key schedule's move (Info), the ephemeral key's and
// a wrong mount's warnings (Warn), a signing failure and a store that
// cannot answer (Error). No line holds a secret or a token. Without it
// (or with nil) they go to slog.Default(), as it is when each is logged,
// so that a warning is never lost; give slog.New(slog.DiscardHandler)
// for none.
func WithLogger(l *slog.Logger) Option {
	return func(iss *Issuer) {
		if l != nil {
			iss.logger = l
		}
	}
}

// defaultLogger logs through slog.Default(), looked up at each line: the
// issuer's logger when WithLogger gave none, which follows a later
// slog.SetDefault.
var defaultLogger = slog.New(toDefault{})

// toDefault is a slog.Handler that hands each record to slog.Default()'s
// handler of the moment.
type toDefault struct{}

func (toDefault) Enabled(ctx context.Context, l slog.Level) bool {
	return slog.Default().Handler().Enabled(ctx, l)
}

func (toDefault) Handle(ctx context.Context, r slog.Record) error {
	return slog.Default().Handler().Handle(ctx, r)
}

// WithAttrs and WithGroup bind to the handler of the moment; the issuer
// logs with neither.
func (toDefault) WithAttrs(as []slog.Attr) slog.Handler {
	return slog.Default().Handler().WithAttrs(as)
}

func (toDefault) WithGroup(name string) slog.Handler {
	return slog.Default().Handler().WithGroup(name)
}

// WithClock sets the issuer's clock, for tests. Without it (or with nil)
// it is time.Now. The failure limiter reads it too: do not share a
// limit.Store (WithLimiterStore) between issuers on different clocks.
func WithClock(now func() time.Time) Option {
	return func(iss *Issuer) {
		if now != nil {
			iss.now = now
		}
	}
}

// WithHandshakeVerification tells the issuer that the TLS server in front
// of it verifies client certificates at the handshake, refusing one that
// does not chain to CAs of its own (Go's tls.VerifyClientCertIfGiven or
// RequireAndVerifyClientCert; idsauth serve -client-ca), so that a
// self-signed client certificate never reaches it unless it is one of
// those CAs. Discovery then does not list self_signed_tls_client_auth,
// and New and Reload warn about clients that authenticate so
// (ClientConfig.CertificateThumbprints), unless MTLSConfig.CertificateHeader
// brings certificates from a proxy, whose handshake the issuer does not
// see. Without it, the TLS server takes any certificate
// (tls.RequestClientCert) and the issuer checks it, as MTLSConfig says.
func WithHandshakeVerification() Option {
	return func(iss *Issuer) { iss.handshakeVerifies = true }
}

// WithVerifier makes the issuer check client secrets with v instead of a
// Verifier of its own, so that one bound on concurrent bcrypt checks and
// one failure floor cover the issuer and SCIMAuth together (give
// middleware.SCIMConfig.Verifier the same v). The issuer primes v with its
// clients' hashes on every load. Config.Verifier does not apply then: v's
// own settings do.
func WithVerifier(v *secret.Verifier) Option {
	return func(iss *Issuer) { iss.verifier = v }
}

// WithLimiterStore sets where the failure limiter keeps its budgets, for
// the issuer's life: give the replicas of one issuer one shared store
// (such as the Redis store of github.com/idsauth/idsauth/redisstore), so
// that they enforce one budget per client and per address between them.
// Config.Limits still sets the budgets, passed with each request; its
// MemoryBytes does not apply. Without it (or with nil) the issuer keeps a
// limit.Memory of Limits.MemoryBytes, which Reload keeps while the limits
// stay the same.
//
// When the store is also a limit.ReplayStore (limit.Memory and the Redis
// store are), it remembers the jti of each accepted client assertion too,
// so that replicas sharing it accept an assertion once between them;
// ClientAssertions.ReplayCacheBytes does not apply then. Otherwise each
// issuer remembers them in a cache of its own.
//
// When the store cannot answer (an error other than a *limit.Refusal),
// the token request is answered 503 temporarily_unavailable with
// Retry-After and no secret is checked, and no token is issued for an
// assertion whose jti it cannot remember: whether a store fails so or
// falls back to limits and memory of its own is the store's choice.
func WithLimiterStore(s limit.Store) Option {
	return func(iss *Issuer) {
		if s != nil {
			iss.store = s
		}
	}
}

// WithTokenStore keeps the grants of reference tokens (clients with
// AccessTokenType "reference") in s, for the issuer's life: a store shared
// by the replicas (redisstore) lets any of them introspect or revoke a
// token another one issued. Without it the issuer keeps them in a
// tokenstore.Memory of its own (64 MiB); when the store is
// full, or cannot answer, no reference token is issued (503
// temporarily_unavailable) and none is forgotten.
func WithTokenStore(s tokenstore.Store) Option {
	return func(iss *Issuer) {
		if s != nil {
			iss.tokens = s
		}
	}
}
