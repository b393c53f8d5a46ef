package issuer

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/idsauth/idsauth/internal/jws"
	"github.com/idsauth/idsauth/internal/oauthwire"
	"github.com/idsauth/idsauth/scope"
	"github.com/idsauth/idsauth/tokenstore"
)

// referenceBytes is the randomness of a reference token: 256 bits from
// crypto/rand, written as 43 base64url characters.
const referenceBytes = 32

// grantReference issues a reference token: a random handle whose grant the
// token store keeps under its SHA-256. A store that is full or cannot
// answer issues nothing: 503 temporarily_unavailable, and the log says
// why. A store that answered too late may still write the grant: that of
// a token nobody was given, which no one can present, and which expires
// at its exp.
func (iss *Issuer) grantReference(q *request, cl *client, granted, aud []string, bind cnf) (*[]byte, *refusal) {
	now := q.now
	var raw [referenceBytes]byte
	_, _ = rand.Read(raw[:]) // never fails (crypto/rand)
	token := base64.RawURLEncoding.EncodeToString(raw[:])
	iat := now.Truncate(time.Second)
	g := tokenstore.Grant{
		ClientID:  cl.id,
		Scopes:    granted,
		Audience:  aud,
		IssuedAt:  iat,
		ExpiresAt: iat.Add(cl.lifetime),
		ID:        string(appendJTI(nil)),
		JKT:       bind.JKT,
		X5T:       bind.X5T,
		Epoch:     cl.epoch,
	}
	if err := iss.tokens.Put(q.ctx, tokenstore.KeyOf(token), g); err != nil {
		why := "the reference token store cannot answer"
		switch {
		case errors.Is(err, tokenstore.ErrClientFull):
			why = "the client holds its share of the reference token store"
		case errors.Is(err, tokenstore.ErrFull):
			why = "the reference token store is full"
		}
		iss.storeFailed(storeIssue, now, "idsauth issuer: no reference token issued: "+why, slog.String("client_id", cl.id), slog.String("error", err.Error()))
		return nil, &refusal{id: storeRefused, why: why}
	}
	body, err := json.Marshal(struct {
		AccessToken string `json:"access_token"`
		TokenType   string `json:"token_type"`
		ExpiresIn   int64  `json:"expires_in"`
		Scope       string `json:"scope"`
	}{token, tokenType(bind.JKT), int64(cl.lifetime / time.Second), strings.Join(granted, " ")})
	if err != nil {
		return nil, refuse(answerFailed)
	}
	answer := answers.get()
	*answer = append(append((*answer)[:0], body...), '\n')
	return answer, nil
}

// introspection is the answer for an active token (RFC 7662 §2.2).
type introspection struct {
	Active    bool     `json:"active"`
	Scope     string   `json:"scope"`
	ClientID  string   `json:"client_id"`
	Subject   string   `json:"sub,omitempty"`
	Audience  []string `json:"aud,omitempty"`
	Issuer    string   `json:"iss"`
	ExpiresAt int64    `json:"exp"`
	IssuedAt  int64    `json:"iat,omitempty"`
	NotBefore int64    `json:"nbf,omitempty"`
	ID        string   `json:"jti,omitempty"`
	TokenType string   `json:"token_type"`
	Cnf       *cnf     `json:"cnf,omitempty"`
}

// cnf is a bound token's confirmation claim (RFC 7800): the thumbprint
// of its DPoP key (RFC 9449 §6) or of its client certificate (RFC 8705
// §3.1), in a JWT and in an introspection answer (RFC 8705 §3.2).
type cnf struct {
	JKT string `json:"jkt,omitempty"`
	X5T string `json:"x5t#S256,omitempty"`
}

// tokenType is the token_type of a token bound to jkt, or of a bearer
// token when jkt is empty.
func tokenType(jkt string) string {
	if jkt != "" {
		return "DPoP"
	}
	return "Bearer"
}

// inactive is the answer for every other token: unknown, expired,
// revoked, malformed, or another API's.
var inactive = []byte(`{"active":false}` + "\n")

// introspect serves the introspection endpoint (RFC 7662): an API
// resource, authenticated like a client, asks about a token, reference or
// JWT, and is told of it only if it is live and carries one of the API's
// scopes, and then only of those scopes.
func (iss *Issuer) introspect(w http.ResponseWriter, r *http.Request, st *state) {
	start := time.Now()
	q := request{endpoint: introspectionEndpoint}
	api, no := iss.introspector(w, r, st, &q)
	if no != nil {
		a := q.answer(no)
		a.write(w)
		iss.observeRefusal(r, no, a, q.who, time.Since(start))
		return
	}
	body, err := iss.answer(q.ctx, q.form.get(tokenParam), apiScopes(api.name))
	if err != nil {
		iss.storeFailed(storeIntrospect, q.now, "idsauth issuer: introspection: the reference token store cannot answer", slog.String("api", api.name), slog.String("error", err.Error()))
		q.answer(refuse(introspectDown)).write(w)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	oauthwire.WriteBody(w, http.StatusOK, body)
}

// introspector reads an introspection request and authenticates its API
// resource, as the token endpoint does a client.
func (iss *Issuer) introspector(w http.ResponseWriter, r *http.Request, st *state, q *request) (*apiResource, *refusal) {
	if no := q.read(w, r, st, iss.now()); no != nil {
		return nil, no
	}
	if q.unusable != nil {
		return nil, q.unusable
	}
	cl, no := iss.authenticate(q)
	q.who.api, q.who.client = q.who.client, "" // a registered API's name, for the log alone
	if no != nil {
		return nil, no
	}
	if !q.form.has(tokenParam) {
		return nil, refuse(tokenMissing)
	}
	return st.apis[cl.id], nil
}

// IntrospectToken answers, in the same process, what the introspection
// endpoint would answer the API resource api about token (RFC 7662 JSON),
// without authenticating it: an accesstoken.Validator whose
// Introspection.Local is the issuer checks reference tokens with nothing on the wire. An api that is
// not registered is an error.
func (iss *Issuer) IntrospectToken(ctx context.Context, api, token string) ([]byte, error) {
	if iss.current().apis[api] == nil {
		return nil, fmt.Errorf("issuer: no API resource %q is registered", api)
	}
	return iss.answer(ctx, token, apiScopes(api))
}

// IntrospectScopes answers, in the same process, what the introspection
// endpoint would answer about token an API resource whose scopes are
// scopes: a caller that is no registered API resource, such as the
// administration API of github.com/idsauth/idsauth/pgregistry, learns so
// at each call whether a token is still live, its client still
// registered, enabled and holding the scope, whatever the kind of token.
func (iss *Issuer) IntrospectScopes(ctx context.Context, token string, scopes ...string) ([]byte, error) {
	set := scope.NewSet(scopes...)
	return iss.answer(ctx, token, func(*state) scope.Set { return set })
}

// apiScopes returns the scopes of the API resource named name in a state:
// none when that state has no such API resource.
func apiScopes(name string) func(*state) scope.Set {
	return func(st *state) scope.Set {
		if api := st.apis[name]; api != nil {
			return api.scopes
		}
		return nil
	}
}

// answer is the introspection answer about token for the scopes that
// scopesOf gives (an API resource's): active with the grant's fields when the token is live,
// its client would still be issued it (stillIssued, stillAudience) and it
// carries one of the API's scopes that the client still holds, else
// exactly inactive.
//
// It decides by the configuration current once the grant is found (see
// lookup), not by the one the request started with: the API's
// authentication (a bcrypt check, the failure floor) and the token
// store may each take a while, and a Reload may return meanwhile; an
// answer given after it returned is the new configuration's. An API the
// reload removed is told nothing.
func (iss *Issuer) answer(ctx context.Context, token string, scopesOf func(*state) scope.Set) ([]byte, error) {
	st, g, ok, err := iss.lookup(ctx, token, iss.now())
	if err != nil {
		return nil, err
	}
	told, cl := scopesOf(st), st.client(g.ClientID)
	var mine, aud []string
	if ok && told != nil && stillIssued(cl, !looksLikeJWT(token), g) {
		if aud, ok = cl.stillAudience(g.Audience); !ok {
			return append([]byte(nil), inactive...), nil
		}
		for _, s := range g.Scopes {
			if told.Has(s) && cl.scopes.Has(s) {
				mine = append(mine, s)
			}
		}
	}
	if len(mine) == 0 {
		return append([]byte(nil), inactive...), nil // the caller's to keep
	}
	answer := introspection{
		Active:    true,
		Scope:     strings.Join(mine, " "),
		ClientID:  g.ClientID,
		Audience:  aud,
		Issuer:    st.issuer,
		ExpiresAt: g.ExpiresAt.Unix(),
		IssuedAt:  unixOrZero(g.IssuedAt),
		NotBefore: unixOrZero(g.IssuedAt),
		ID:        g.ID,
		TokenType: tokenType(g.JKT),
		Cnf:       cnfOf(g.JKT, g.X5T),
	}
	if !st.identityServer {
		answer.Subject = g.ClientID // as the token's own sub would say
	}
	body, err := json.Marshal(answer)
	if err != nil {
		return nil, err
	}
	// The client's claims, as its JWTs carry them: from its registration
	// now (the grant does not keep them).
	if len(cl.claims) > 0 {
		body = append(append(body[:len(body)-1], cl.claims...), '}')
	}
	return append(body, '\n'), nil
}

// stillIssued reports whether client cl, as the configuration now
// registers it, would be issued a token of the kind a live token of grant
// g is (reference or JWT, bound to a DPoP key or a bearer token), under
// the registration it was issued under (its epoch): a token outlives no
// change that removed its client, disabled it, dropped every secret it
// had, took client_credentials from it, changed the kind of its tokens or
// made it require DPoP (its bearer tokens leaked, say), and a client
// served again after one of the first three is a new client for the
// tokens issued before. Its grant was made under a registration that no
// longer exists; the operator who removes a compromised client ends its
// tokens so, at every replica that has applied the change. (A scope taken
// from the client is taken from its tokens' answers by answer, an
// audience by stillAudience.)
func stillIssued(cl *client, reference bool, g tokenstore.Grant) bool {
	return cl != nil && cl.clientCreds && cl.reference == reference && (g.JKT != "" || !cl.requireDPoP) && g.Epoch == cl.epoch
}

// stillAudience returns the aud of a token of cl's for its answer, and
// whether the token lives on, by cl's audience as now registered: a
// token naming a resource the client may no longer ask for is ended, as
// the client narrowed its audience so that its tokens no longer reach
// that resource. Under the identityserver profile, a client without an
// audience of its own (apiAud) has the API resources of its scopes: its
// tokens' aud follows their scopes, so a scope taken takes its API
// resources from the answer's aud, as answer takes the scope from its
// scope, and the token ends when none is left.
func (cl *client) stillAudience(aud []string) ([]string, bool) {
	gone := func(a string) bool { return !slices.Contains(cl.audience, a) }
	if !cl.apiAud {
		return aud, !slices.ContainsFunc(aud, gone)
	}
	if !slices.ContainsFunc(aud, gone) {
		return aud, true
	}
	kept := slices.DeleteFunc(slices.Clone(aud), gone)
	return kept, len(kept) > 0
}

func cnfOf(jkt, x5t string) *cnf {
	if jkt == "" && x5t == "" {
		return nil
	}
	return &cnf{JKT: jkt, X5T: x5t}
}

func unixOrZero(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.Unix()
}

// lookup returns the grant of a live token at now, and the span of the
// configuration current once it was found: a reference token's grant
// from the store, then the span (the store may answer after a Reload has
// returned); a JWT's from its claims, once one of the keys that span
// publishes has verified it.
func (iss *Issuer) lookup(ctx context.Context, token string, now time.Time) (*state, tokenstore.Grant, bool, error) {
	if looksLikeJWT(token) {
		st := iss.current()
		g, ok := st.jwtGrant(token, now)
		return st, g, ok, nil
	}
	var g tokenstore.Grant
	var ok bool
	var err error
	if len(token) <= maxAssertionLength {
		g, ok, err = iss.tokens.Get(ctx, tokenstore.KeyOf(token), now)
	}
	return iss.current(), g, ok, err
}

// looksLikeJWT reports whether token has a JWS's three parts: what the
// introspection and revocation endpoints treat as a JWT, and the rest as
// a reference token.
func looksLikeJWT(token string) bool { return strings.Count(token, ".") == 2 }

// jwtGrant verifies a JWT that this issuer signed, by a key st
// publishes, and returns its grant, if it is live at now.
func (st *state) jwtGrant(token string, now time.Time) (tokenstore.Grant, bool) {
	var none tokenstore.Grant
	t, err := jws.Parse(token)
	if err != nil || t.Has("crit") || jws.Method(t.Alg) == nil {
		return none, false
	}
	if k, ok := st.byKID[t.KID]; !ok || k.Alg != t.Alg || t.Verify(k.Public()) != nil {
		return none, false
	}
	payload, err := t.Payload()
	if err != nil {
		return none, false
	}
	c, err := jws.ReadClaims(payload)
	if err != nil {
		return none, false
	}
	var g tokenstore.Grant
	signedBy, _, err1 := c.String("iss")
	exp, hasExp, err2 := c.Time("exp")
	nbf, _, err3 := c.Time("nbf")
	var err4, err5, err6, err7 error
	g.ClientID, _, err4 = c.String("client_id")
	g.ID, _, err5 = c.String("jti")
	g.IssuedAt, _, err6 = c.Time("iat")
	g.Audience, _, err = c.Strings("aud")
	if g.Epoch, err7 = c.Uint53(epochClaim); err7 != nil {
		return none, false
	}
	switch {
	case errors.Join(err, err1, err2, err3, err4, err5, err6) != nil, signedBy != st.issuer, !hasExp:
		return none, false
	case !now.Before(exp), !nbf.IsZero() && now.Before(nbf):
		return none, false
	}
	g.ExpiresAt = exp
	if raw, ok := c.Raw("cnf"); ok {
		var b cnf
		if json.Unmarshal(raw, &b) != nil {
			return none, false
		}
		g.JKT, g.X5T = b.JKT, b.X5T
	}
	scopeClaim, _ := c.Raw("scope")
	if g.Scopes, err = scope.ParseClaim(scopeClaim); err != nil {
		return none, false
	}
	return g, true
}

// revoke serves the revocation endpoint (RFC 7009): a client, authenticated
// as at the token endpoint, revokes one of its own reference tokens. The
// answer is 200 whatever the token: another client's, unknown, expired,
// already revoked, or a JWT, which nothing can revoke before its exp (a
// validator checks a JWT without asking the issuer). While the token store
// cannot answer within its bound, 503 temporarily_unavailable: the
// revocation may still be applied once the store goes on, so the answer
// says its outcome is unknown, and that revoking again is safe (the
// client assumes the token live and retries, RFC 7009 §2.2.1).
func (iss *Issuer) revoke(w http.ResponseWriter, r *http.Request, st *state) {
	start := time.Now()
	q := request{endpoint: revocationEndpoint}
	if no := iss.revokeToken(w, r, st, &q); no != nil {
		a := q.answer(no)
		a.write(w)
		iss.observeRefusal(r, no, a, q.who, time.Since(start))
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
}

func (iss *Issuer) revokeToken(w http.ResponseWriter, r *http.Request, st *state, q *request) *refusal {
	if no := q.read(w, r, st, iss.now()); no != nil {
		return no
	}
	if q.unusable != nil {
		return q.unusable
	}
	cl, no := iss.authenticate(q)
	if no != nil {
		return no
	}
	if !q.form.has(tokenParam) {
		return refuse(tokenMissing)
	}
	token := q.form.get(tokenParam)
	if looksLikeJWT(token) || len(token) > maxAssertionLength {
		return nil // a JWT: nothing to revoke
	}
	if _, err := iss.tokens.Revoke(q.ctx, tokenstore.KeyOf(token), cl.id); err != nil {
		iss.storeFailed(storeRevoke, q.now, "idsauth issuer: revocation: the reference token store cannot answer", slog.String("client_id", cl.id), slog.String("error", err.Error()))
		return refuse(revokeDown)
	}
	return nil
}
