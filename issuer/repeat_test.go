package issuer_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"

	"github.com/idsauth/idsauth/issuer"
	"github.com/idsauth/idsauth/limit"
	"github.com/idsauth/idsauth/scope"
	"github.com/idsauth/idsauth/secret"
)

// fetchToken runs one client_credentials fetch as x/oauth2 does with its
// default AuthStyleAutoDetect: a wrong secret is sent twice, in the
// Authorization header and then in the body. It returns the status and
// error code of the last answer: 200 and "" for a token.
func fetchToken(t *testing.T, s *server, id, secret string) (int, string) {
	t.Helper()
	cc := clientcredentials.Config{ClientID: id, ClientSecret: secret, TokenURL: s.tokenURL(), Scopes: []string{scope.AdminWebAPI}}
	tok, err := cc.Token(context.Background())
	var re *oauth2.RetrieveError
	switch {
	case err == nil && tok.AccessToken != "":
		return 200, ""
	case errors.As(err, &re):
		return re.Response.StatusCode, re.ErrorCode
	}
	t.Fatalf("fetching a token: %v", err)
	return 0, ""
}

// TestRepeatedWrongSecretIsChargedOnce: x/oauth2's AuthStyleAutoDetect
// sends each wrong secret twice, and a misconfigured client runs again and
// again with the same one. The same secret failing again for the same
// client from the same address tells nobody anything new, so it is
// charged once: five misconfigured runs within a budget of five leave the
// client's right secret from that address its token.
func TestRepeatedWrongSecretIsChargedOnce(t *testing.T) {
	s := newServer(t, func(c *issuer.Config) { c.Limits.FailedAttemptsPerSubject = 5 })
	for run := range 5 {
		if status, code := fetchToken(t, s, "admin", "last-year's-secret"); status != 401 || code != "invalid_client" {
			t.Fatalf("misconfigured run %d: %d %s, want 401 invalid_client", run, status, code)
		}
	}
	if status, code := fetchToken(t, s, "admin", adminSecret); status != 200 {
		t.Fatalf("the right secret after five misconfigured runs: %d %s", status, code)
	}
}

// TestDistinctWrongSecretsAreEachCharged: every distinct wrong secret is
// a guess and is charged once, so a budget of five gives five guesses
// (each answered 401 however x/oauth2 sends it) and the sixth gets 429;
// the address failed for the client, so its right secret waits too.
func TestDistinctWrongSecretsAreEachCharged(t *testing.T) {
	s := newServer(t, func(c *issuer.Config) { c.Limits.FailedAttemptsPerSubject = 5 })
	for guess := range 5 {
		if status, code := fetchToken(t, s, "admin", fmt.Sprint("guess-", guess)); status != 401 || code != "invalid_client" {
			t.Fatalf("guess %d: %d %s, want 401 invalid_client", guess, status, code)
		}
	}
	if status, code := fetchToken(t, s, "admin", "guess-5"); status != 429 || code != "slow_down" {
		t.Fatalf("a sixth distinct guess: %d %s, want 429 slow_down", status, code)
	}
	if status, code := fetchToken(t, s, "admin", adminSecret); status != 429 {
		t.Fatalf("the right secret from the guessing address: %d %s, want 429", status, code)
	}
}

// TestRepeatedFailureAnswersAsTheFirst: a wrong secret sent again gets
// the first answer byte for byte, by either method (the Basic challenge
// with Basic), and, for a bcrypt client, is held to the failure floor as
// the first was, without a second bcrypt check or a turn among them.
func TestRepeatedFailureAnswersAsTheFirst(t *testing.T) {
	human := humanClient(t)
	s := newServer(t, func(c *issuer.Config) {
		c.Clients = append(c.Clients, human)
	})
	body := form("grant_type", "client_credentials", "client_id", "human", "client_secret", "battery staple", "scope", scope.AdminWebAPI)
	viaBasic := func() answer {
		return post(t, s.tokenURL(), formType, form("grant_type", "client_credentials", "scope", scope.AdminWebAPI), "Authorization", basic("human", "battery staple"))
	}
	first := viaBasic()
	if first.status != 401 || first.body["error"] != "invalid_client" || first.header.Get("WWW-Authenticate") == "" {
		t.Fatalf("the first wrong secret: %d %s %v", first.status, first.raw, first.header)
	}
	before := issuer.VerifierCounts(s.iss)
	same := func(a answer, challenge string) bool {
		return a.status == first.status && a.raw == first.raw && a.header.Get("WWW-Authenticate") == challenge &&
			a.header.Get("Cache-Control") == first.header.Get("Cache-Control") && a.header.Get("Pragma") == first.header.Get("Pragma")
	}
	for i := range 3 {
		if a := viaBasic(); !same(a, first.header.Get("WWW-Authenticate")) {
			t.Fatalf("repeat %d by Basic: %d %s %v; the first: %d %s %v", i, a.status, a.raw, a.header, first.status, first.raw, first.header)
		}
		if a := post(t, s.tokenURL(), formType, body); !same(a, "") {
			t.Fatalf("repeat %d in the body: %d %s %v; the first: %d %s %v", i, a.status, a.raw, a.header, first.status, first.raw, first.header)
		}
	}
	after := issuer.VerifierCounts(s.iss)
	if after.Slow != before.Slow || after.Queued != before.Queued || after.Floors-before.Floors != 6 {
		t.Fatalf("six repeats did %+v after %+v: want no bcrypt check, no turn, and six floors", after, before)
	}
}

// TestRightSecretCutShortIsNotTakenForARepeat: a bcrypt check that the
// request's end cut short (while it waited for its turn) proved nothing,
// so it is not remembered as failed: the same right secret from the same
// address, in a request that lasts, gets its token.
func TestRightSecretCutShortIsNotTakenForARepeat(t *testing.T) {
	human := humanClient(t)
	s := newServer(t, func(c *issuer.Config) {
		c.Clients = append(c.Clients, human)
		c.Limits = limit.Config{FailedAttemptsPerSubject: 1000, FailedAttemptsPerAddress: 1000}
	}, issuer.WithVerifier(secret.NewVerifier(secret.VerifierConfig{CacheTTL: -1}))) // every check runs bcrypt
	body := form("grant_type", "client_credentials", "client_id", "human", "client_secret", humanSecret, "scope", scope.AdminWebAPI)
	try := func(ctx context.Context) int {
		req := httptest.NewRequestWithContext(ctx, http.MethodPost, s.tokenURL(), strings.NewReader(body))
		req.Header.Set("Content-Type", formType)
		rec := httptest.NewRecorder()
		s.iss.ServeHTTP(rec, req)
		return rec.Code
	}
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	cut := 0
	for range 40 { // an ended request finds its turn taken or not, at random
		if try(ended) == 401 {
			cut++
		}
	}
	if cut == 0 {
		t.Fatal("no check was cut short: the test checks nothing")
	}
	if status := try(context.Background()); status != 200 {
		t.Fatalf("the right secret after %d checks of it were cut short: %d", cut, status)
	}
}

// TestRightSecretComputesNoRepeatHMAC: the repeated-wrong-secret table
// keyed every secret checked by an HMAC, a successful request's too, which
// put the token endpoint at 1.023 to 1.029 times the bare signing server's
// instructions. Now a client that gives its right secret from an address
// where it failed nothing computes none, at the token, introspection and
// revocation endpoints alike, by Basic or in the body; a wrong secret
// computes one (to be remembered), and its repeat one (to be found), and
// is still answered as a repeat, not charged.
func TestRightSecretComputesNoRepeatHMAC(t *testing.T) {
	s := newServer(t, func(c *issuer.Config) {
		withReference(c)
		c.Limits.FailedAttemptsPerSubject = 1
	})
	for range 20 {
		if a := post(t, s.tokenURL(), formType, form("grant_type", "client_credentials", "scope", scope.AdminWebAPI), "Authorization", basic("admin", adminSecret)); a.status != 200 {
			t.Fatalf("Basic: %d %s", a.status, a.raw)
		}
		if a := post(t, s.tokenURL(), formType, form("grant_type", "client_credentials", "client_id", "admin", "client_secret", adminSecret, "scope", scope.AdminWebAPI)); a.status != 200 {
			t.Fatalf("in the body: %d %s", a.status, a.raw)
		}
	}
	tok := referenceToken(t, s, "ref", refSecret, scope.AdminWebAPI)
	if a := introspect(t, s, "admin-api", adminAPISec, tok); a.body["active"] != true {
		t.Fatalf("introspection: %s", a.raw)
	}
	if a := post(t, s.revocationURL(), formType, form("token", tok), "Authorization", basic("ref", refSecret)); a.status != 200 {
		t.Fatalf("revocation: %d %s", a.status, a.raw)
	}
	if n := issuer.RepeatMarks(s.iss); n != 0 {
		t.Fatalf("43 requests with right secrets computed %d HMACs of the repeat table, want 0", n)
	}
	wrong := form("grant_type", "client_credentials", "client_id", "connect", "client_secret", "wrong", "scope", scope.ConnectWebAPI)
	for i := range 3 {
		if a := post(t, s.tokenURL(), formType, wrong); a.status != 401 {
			t.Fatalf("wrong secret %d: %d %s (a repeat charged the budget of one?)", i, a.status, a.raw)
		}
	}
	if n := issuer.RepeatMarks(s.iss); n != 3 {
		t.Fatalf("a wrong secret and two repeats computed %d HMACs, want 3", n)
	}
}

// TestRepeatsOutliveChangesButNotTheSecrets: a registry changes often
// (a thousand changes a minute), and each change makes a new state: the
// failures remembered outlive them, so a misconfigured client's repeats
// stay free whatever else changes; but a failure is remembered against
// the secrets it was checked against, so the secret that failed is right
// once the client's registration (or the file, at a reload) gives it.
func TestRepeatsOutliveChangesButNotTheSecrets(t *testing.T) {
	s := newServer(t, func(c *issuer.Config) { c.Limits.FailedAttemptsPerSubject = 2 })
	reg := func(id, secretText string) issuer.ClientConfig {
		return issuer.ClientConfig{ClientID: id, SecretHashes: []string{secret.HashSHA256(secretText).String()}, Scopes: []string{scope.AdminWebAPI}}
	}
	if err := s.iss.UpdateRegistered([]issuer.ClientConfig{reg("rotating", "old")}, nil); err != nil {
		t.Fatal(err)
	}
	for run := range 4 {
		if status, code := fetchToken(t, s, "rotating", "new"); status != 401 || code != "invalid_client" {
			t.Fatalf("run %d of the new secret, before the rotation: %d %s, want 401 invalid_client (a repeat, not charged)", run, status, code)
		}
		if err := s.iss.UpdateRegistered([]issuer.ClientConfig{reg(fmt.Sprint("other-", run), "x")}, nil); err != nil {
			t.Fatal(err)
		}
	}
	if status, code := fetchToken(t, s, "rotating", "old"); status != 200 {
		t.Fatalf("the right secret after four repeats across four changes: %d %s", status, code)
	}
	if err := s.iss.UpdateRegistered([]issuer.ClientConfig{reg("rotating", "new")}, nil); err != nil {
		t.Fatal(err)
	}
	if status, code := fetchToken(t, s, "rotating", "new"); status != 200 {
		t.Fatalf("the secret that failed, once the registration gives it: %d %s, want a token", status, code)
	}
}
