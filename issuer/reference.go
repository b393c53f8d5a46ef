package issuer

import (
	"context"
	"crypto"
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
// why.
func (iss *Issuer) grantReference(ctx context.Context, st *state, cl *client, granted, aud []string, now time.Time, jkt string) (*[]byte, *tokenError) {
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
		JKT:       jkt,
	}
	if err := iss.tokens.Put(ctx, tokenstore.KeyOf(token), g); err != nil {
		why := "the reference token store cannot answer"
		switch {
		case errors.Is(err, tokenstore.ErrClientFull):
			why = "the client holds its share of the reference token store"
		case errors.Is(err, tokenstore.ErrFull):
			why = "the reference token store is full"
		}
		// Every refusal is logged at Info as any refused token request;
		// this line, for the operator, at most every 10 seconds, so that
		// a client asking in a loop cannot flood the log with it.
		if last := iss.storeLogged.Load(); now.UnixNano()-last >= int64(10*time.Second) && iss.storeLogged.CompareAndSwap(last, now.UnixNano()) {
			iss.logger.Error("idsauth issuer: no reference token issued: "+why, slog.String("client_id", cl.id), slog.String("error", err.Error()))
		}
		return nil, &tokenError{status: http.StatusServiceUnavailable, code: "temporarily_unavailable", desc: "no token can be issued now; try again shortly", retry: 1, why: why}
	}
	body, err := json.Marshal(struct {
		AccessToken string `json:"access_token"`
		TokenType   string `json:"token_type"`
		ExpiresIn   int64  `json:"expires_in"`
		Scope       string `json:"scope"`
	}{token, tokenType(jkt), int64(cl.lifetime / time.Second), strings.Join(granted, " ")})
	if err != nil {
		return nil, &tokenError{status: http.StatusInternalServerError, code: "server_error", desc: "the answer could not be written"}
	}
	answer := answers.get()
	*answer = append(append((*answer)[:0], body...), '\n')
	return answer, nil
}

// apiSubject is the failure limiter's subject for an API resource's
// name: apart from the clients', so that an API and a client of one name
// spend separate budgets.
func apiSubject(name string) string { return "\x00api:" + name }

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

// cnf is a bound token's confirmation claim (RFC 7800, RFC 9449 §6).
type cnf struct {
	JKT string `json:"jkt"`
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
	who := attempt{endpoint: "introspection"}
	api, form, terr := iss.authenticateAPI(w, r, st, &who)
	if terr == nil && !form.has(tokenParam) {
		terr = badRequest("invalid_request", "token is missing")
	}
	if terr != nil {
		iss.refuse(w, terr)
		iss.refused(r, terr, who, time.Since(start))
		return
	}
	body, err := iss.answer(r.Context(), st, api, form.get(tokenParam))
	if err != nil {
		iss.logger.Error("idsauth issuer: introspection: the reference token store cannot answer", slog.String("api", api.name), slog.String("error", err.Error()))
		terr := &tokenError{status: http.StatusServiceUnavailable, code: "temporarily_unavailable", desc: "the token cannot be checked now; try again shortly", retry: 1}
		iss.refuse(w, terr)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	oauthwire.WriteBody(w, http.StatusOK, body)
}

// IntrospectToken answers, in the same process, what the introspection
// endpoint would answer the API resource api about token (RFC 7662 JSON),
// without authenticating it: an accesstoken.Validator whose
// Introspection.Local is the issuer checks reference tokens with nothing on the wire. An api that is
// not registered is an error.
func (iss *Issuer) IntrospectToken(ctx context.Context, api, token string) ([]byte, error) {
	st := iss.current()
	a := st.apis[api]
	if a == nil {
		return nil, fmt.Errorf("issuer: no API resource %q is registered", api)
	}
	return iss.answer(ctx, st, a, token)
}

// answer is the introspection answer about token for api: active with the
// grant's fields when the token is live, its client would still be issued
// it (stillIssued) and it carries one of the API's scopes that the client
// still holds, else exactly inactive.
func (iss *Issuer) answer(ctx context.Context, st *state, api *apiResource, token string) ([]byte, error) {
	g, ok, err := iss.lookup(ctx, st, token, iss.now())
	if err != nil {
		return nil, err
	}
	cl := st.clients[g.ClientID]
	var mine []string
	if ok && stillIssued(cl, !looksLikeJWT(token)) {
		for _, s := range g.Scopes {
			if api.scopes.Has(s) && cl.scopes.Has(s) {
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
		Audience:  g.Audience,
		Issuer:    st.issuer,
		ExpiresAt: g.ExpiresAt.Unix(),
		IssuedAt:  unixOrZero(g.IssuedAt),
		NotBefore: unixOrZero(g.IssuedAt),
		ID:        g.ID,
		TokenType: tokenType(g.JKT),
		Cnf:       cnfOf(g.JKT),
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
// registers it, would be issued a token of the kind a live token is
// (reference or JWT): a token outlives no reload that removed its client,
// took client_credentials from it or changed the kind of its tokens. Its
// grant was made under a registration that no longer exists; the
// operator who removes a compromised client ends its tokens so, at every
// replica that has reloaded. (A scope taken from the client is taken from
// its tokens' answers by answer.)
func stillIssued(cl *client, reference bool) bool {
	return cl != nil && cl.clientCreds && cl.reference == reference
}

func cnfOf(jkt string) *cnf {
	if jkt == "" {
		return nil
	}
	return &cnf{JKT: jkt}
}

func unixOrZero(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.Unix()
}

// authenticateAPI reads an introspection request and authenticates its
// API resource by its secret, as the token endpoint does a client's.
func (iss *Issuer) authenticateAPI(w http.ResponseWriter, r *http.Request, st *state, who *attempt) (*apiResource, *tokenForm, *tokenError) {
	form := &tokenForm{}
	if terr := postForm(w, r, st, "introspection", form); terr != nil {
		return nil, nil, terr
	}
	cl, terr := iss.authenticate(r, form, st, who, iss.now(), st.apiByID, apiSubject, nil)
	who.api, who.client = who.client, "" // a registered API's name, for the log alone
	if terr != nil {
		return nil, nil, terr
	}
	return st.apis[cl.id], form, nil
}

// lookup returns the grant of a live token: a reference token's from the
// store, a JWT's from its claims once one of the issuer's published keys
// has verified it.
func (iss *Issuer) lookup(ctx context.Context, st *state, token string, now time.Time) (tokenstore.Grant, bool, error) {
	if looksLikeJWT(token) {
		g, ok := iss.jwtGrant(ctx, st, token, now)
		return g, ok, nil
	}
	if len(token) > MaxAssertionLength {
		return tokenstore.Grant{}, false, nil
	}
	return iss.tokens.Get(ctx, tokenstore.KeyOf(token), now)
}

// looksLikeJWT reports whether token has a JWS's three parts: what the
// introspection and revocation endpoints treat as a JWT, and the rest as
// a reference token.
func looksLikeJWT(token string) bool { return strings.Count(token, ".") == 2 }

// jwtGrant verifies a JWT that this issuer signed and returns its grant,
// if it is live at now.
func (iss *Issuer) jwtGrant(ctx context.Context, st *state, token string, now time.Time) (tokenstore.Grant, bool) {
	var none tokenstore.Grant
	t, err := jws.Parse(token)
	if err != nil || t.Has("crit") || jws.Method(t.Alg) == nil {
		return none, false
	}
	pubs, err := iss.VerificationKeys(ctx, t.KID, t.Alg)
	if err != nil || !slices.ContainsFunc(pubs, func(k crypto.PublicKey) bool { return t.Verify(k) == nil }) {
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
	var err4, err5, err6 error
	g.ClientID, _, err4 = c.String("client_id")
	g.ID, _, err5 = c.String("jti")
	g.IssuedAt, _, err6 = c.Time("iat")
	g.Audience, _, err = c.Strings("aud")
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
		g.JKT = b.JKT
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
// validator checks a JWT without asking the issuer).
func (iss *Issuer) revoke(w http.ResponseWriter, r *http.Request, st *state) {
	start := time.Now()
	who := attempt{endpoint: "revocation"}
	terr := iss.revokeToken(w, r, st, &who)
	if terr != nil {
		iss.refuse(w, terr)
		iss.refused(r, terr, who, time.Since(start))
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
}

func (iss *Issuer) revokeToken(w http.ResponseWriter, r *http.Request, st *state, who *attempt) *tokenError {
	form := &tokenForm{}
	if terr := postForm(w, r, st, "revocation", form); terr != nil {
		return terr
	}
	cl, terr := iss.authenticate(r, form, st, who, iss.now(), st.clientByID, sameID, nil)
	if terr != nil {
		return terr
	}
	if !form.has(tokenParam) {
		return badRequest("invalid_request", "token is missing")
	}
	token := form.get(tokenParam)
	if looksLikeJWT(token) || len(token) > MaxAssertionLength {
		return nil // a JWT: nothing to revoke
	}
	if _, err := iss.tokens.Revoke(r.Context(), tokenstore.KeyOf(token), cl.id); err != nil {
		iss.logger.Error("idsauth issuer: revocation: the reference token store cannot answer", slog.String("client_id", cl.id), slog.String("error", err.Error()))
		return &tokenError{status: http.StatusServiceUnavailable, code: "temporarily_unavailable", desc: "the token cannot be revoked now; try again shortly", retry: 1}
	}
	return nil
}
