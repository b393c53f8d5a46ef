package issuer_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/time/rate"

	"github.com/idsauth/idsauth/accesstoken"
	"github.com/idsauth/idsauth/internal/keys"
	"github.com/idsauth/idsauth/internal/testlog"
	"github.com/idsauth/idsauth/issuer"
	"github.com/idsauth/idsauth/observe"
	"github.com/idsauth/idsauth/scope"
)

// fakeClock is a clock the test sets, read by the issuer and validators.
type fakeClock struct{ ns atomic.Int64 }

func newClock(t time.Time) *fakeClock {
	c := &fakeClock{}
	c.set(t)
	return c
}

func (c *fakeClock) now() time.Time  { return time.Unix(0, c.ns.Load()) }
func (c *fakeClock) set(t time.Time) { c.ns.Store(t.UnixNano()) }

// rfc3339 formats t for a key's times.
func rfc3339(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// scheduled returns testConfig for issuerURL with the keys ks.
func scheduled(issuerURL string, ks ...issuer.KeyConfig) *issuer.Config {
	cfg := testConfig(issuerURL)
	cfg.EphemeralKey, cfg.Keys = false, ks
	return cfg
}

// tokenKID asks h, an issuer at http://h/ids, for admin's token and
// returns the kid it is signed with.
func tokenKID(t *testing.T, h http.Handler) string {
	t.Helper()
	return headerKID(adminToken(t, h))
}

// adminToken asks h, an issuer at http://h/ids, for admin's token.
func adminToken(t *testing.T, h http.Handler) string {
	t.Helper()
	rec := askAdminToken(h)
	var body struct {
		AccessToken string `json:"access_token"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil || rec.Code != 200 {
		t.Fatalf("token: %d %s", rec.Code, rec.Body)
	}
	return body.AccessToken
}

// askAdminToken asks h, an issuer at http://h/ids, for admin's token,
// and returns its answer.
func askAdminToken(h http.Handler) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodPost, "http://h/ids/connect/token", strings.NewReader(
		form("grant_type", "client_credentials", "client_id", "admin", "client_secret", adminSecret, "scope", scope.AdminWebAPI)))
	req.Header.Set("Content-Type", formType)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// jwksKIDs returns the kids of the JWKS h serves, sorted.
func jwksKIDs(t *testing.T, h http.Handler) []string {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "http://h/ids/.well-known/openid-configuration/jwks", nil))
	var set struct {
		Keys []struct {
			KID string `json:"kid"`
		} `json:"keys"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &set); err != nil {
		t.Fatalf("jwks: %v %s", err, rec.Body)
	}
	var kids []string
	for _, k := range set.Keys {
		kids = append(kids, k.KID)
	}
	slices.Sort(kids)
	return kids
}

func kidsOf(ks ...*keys.Key) []string {
	var kids []string
	for _, k := range ks {
		kids = append(kids, k.KID)
	}
	slices.Sort(kids)
	return kids
}

// TestKeyScheduleSwitchesAtItsInstants steps the issuer's clock through
// a schedule of three keys: at each instant the JWKS, the keys a
// validator in the same process gets, KeyIDs, the signing key and
// KeysVersion change together, without a reload.
func TestKeyScheduleSwitchesAtItsInstants(t *testing.T) {
	k1, k2, k3 := generate("ES256"), generate("EdDSA"), generate("ES256")
	t0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	h := time.Hour
	clock := newClock(t0.Add(-h))
	// The longest lifetime is admin's 3600 s, and a key signs 10 minutes
	// after it is published at the earliest (300 s + 300 s).
	cfg := scheduled("http://h/ids",
		issuer.KeyConfig{Key: k1.Private, RetireAt: t0.Add(3 * h)},
		issuer.KeyConfig{Key: k2.Private, PublishAt: t0, SignAt: t0.Add(h), RetireAt: t0.Add(4 * h)},
		issuer.KeyConfig{Key: k3.Private, PublishAt: t0.Add(2 * h), SignAt: t0.Add(3 * h)},
	)
	iss, err := issuer.New(cfg, issuer.WithClock(clock.now))
	if err != nil {
		t.Fatal(err)
	}
	versions := map[uint64]string{} // a version names one key set
	var lastVersion uint64
	var lastPublished []string
	for _, row := range []struct {
		at        time.Duration
		signer    *keys.Key
		published []*keys.Key
	}{
		{-time.Second, k1, []*keys.Key{k1}},
		{0, k1, []*keys.Key{k1, k2}},
		{h - time.Second, k1, []*keys.Key{k1, k2}},
		{h, k2, []*keys.Key{k1, k2}}, // the latest signAt signs
		{2 * h, k2, []*keys.Key{k1, k2, k3}},
		{3*h - time.Second, k2, []*keys.Key{k1, k2, k3}},
		{3 * h, k3, []*keys.Key{k2, k3}},
		{4 * h, k3, []*keys.Key{k3}},
		{100 * h, k3, []*keys.Key{k3}},
	} {
		t.Run(rfc3339(t0.Add(row.at)), func(t *testing.T) {
			clock.set(t0.Add(row.at))
			if kid := tokenKID(t, iss); kid != row.signer.KID {
				t.Errorf("signed by %s, want %s", kid, row.signer.KID)
			}
			want := kidsOf(row.published...)
			if got := jwksKIDs(t, iss); !slices.Equal(got, want) {
				t.Errorf("JWKS %v, want %v", got, want)
			}
			if ids := iss.KeyIDs(); ids[0] != row.signer.KID || !slices.Equal(slices.Sorted(slices.Values(ids)), want) {
				t.Errorf("KeyIDs %v", ids)
			}
			for _, k := range []*keys.Key{k1, k2, k3} {
				_, err := iss.VerificationKeys(context.Background(), k.KID, k.Alg)
				if pub := slices.Contains(row.published, k); pub != (err == nil) {
					t.Errorf("VerificationKeys(%s): %v, published %v", k.KID, err, pub)
				}
			}
			v := iss.KeysVersion()
			if set, ok := versions[v]; ok && set != fmt.Sprint(want) {
				t.Errorf("version %d named %s and now %v", v, set, want)
			}
			versions[v] = fmt.Sprint(want)
			if lastPublished != nil && slices.Equal(want, lastPublished) != (v == lastVersion) {
				t.Errorf("KeysVersion %d after %d, published %v after %v", v, lastVersion, want, lastPublished)
			}
			lastVersion, lastPublished = v, want
		})
	}
	got := iss.KeySchedule()
	want := []issuer.ScheduledKey{
		{KID: k1.KID, Alg: "ES256", PublishedUntil: t0.Add(3 * h), Signs: true, SignsUntil: t0.Add(h)},
		{KID: k2.KID, Alg: "EdDSA", PublishedFrom: t0, PublishedUntil: t0.Add(4 * h), Signs: true, SignsFrom: t0.Add(h), SignsUntil: t0.Add(3 * h)},
		{KID: k3.KID, Alg: "ES256", PublishedFrom: t0.Add(2 * h), Signs: true, SignsFrom: t0.Add(3 * h)},
	}
	if !slices.EqualFunc(got, want, func(a, b issuer.ScheduledKey) bool {
		return a.KID == b.KID && a.Alg == b.Alg && a.Signs == b.Signs && a.PublishedFrom.Equal(b.PublishedFrom) && a.PublishedUntil.Equal(b.PublishedUntil) &&
			a.SignsFrom.Equal(b.SignsFrom) && a.SignsUntil.Equal(b.SignsUntil)
	}) {
		t.Errorf("KeySchedule:\n%+v\nwant\n%+v", got, want)
	}
}

// headerKID returns the kid of a token the issuer signed.
func headerKID(tok string) string {
	seg, _, _ := strings.Cut(tok, ".")
	b, _ := base64.RawURLEncoding.DecodeString(seg)
	var h struct {
		KID string `json:"kid"`
	}
	_ = json.Unmarshal(b, &h)
	return h.KID
}

// TestTokenSignedByTheKeyOfItsInstant: a token is signed by the key that
// signs at its iat, even when the clock passes a signAt while the request
// is served. The issuer's clock here moves one second at every reading,
// so a request that reads it more than once (to route it to a span of
// the schedule, and for the token's times) reads it at several instants;
// starting at four offsets from the switch, some request straddles it.
func TestTokenSignedByTheKeyOfItsInstant(t *testing.T) {
	k1, k2 := generate("ES256"), generate("ES256")
	t0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	switchAt := t0.Add(time.Hour)
	straddled := 0
	for offset := range 4 {
		clock := newClock(switchAt.Add(-time.Duration(6+offset) * time.Second))
		var read []time.Time // every reading, in order
		ticking := func() time.Time {
			now := time.Unix(0, clock.ns.Add(int64(time.Second)))
			read = append(read, now)
			return now
		}
		iss, err := issuer.New(scheduled("http://h/ids",
			issuer.KeyConfig{Key: k1.Private, RetireAt: t0.Add(3 * time.Hour)},
			issuer.KeyConfig{Key: k2.Private, PublishAt: t0, SignAt: switchAt}),
			issuer.WithClock(ticking))
		if err != nil {
			t.Fatal(err)
		}
		for range 4 {
			before := len(read)
			tok := adminToken(t, iss) // served in this goroutine: read is not shared
			during := read[before:]
			if len(during) > 0 && during[0].Before(switchAt) && !during[len(during)-1].Before(switchAt) {
				straddled++
			}
			payload, _ := base64.RawURLEncoding.DecodeString(strings.Split(tok, ".")[1])
			var c struct {
				IAT int64 `json:"iat"`
			}
			if err := json.Unmarshal(payload, &c); err != nil {
				t.Fatal(err)
			}
			want := k1.KID
			if !time.Unix(c.IAT, 0).Before(switchAt) {
				want = k2.KID
			}
			if kid := headerKID(tok); kid != want {
				t.Errorf("iat %s (the switch at %s) signed by %s, want %s", rfc3339(time.Unix(c.IAT, 0)), rfc3339(switchAt), kid, want)
			}
		}
	}
	if straddled == 0 {
		t.Fatal("no request read the clock both before and after the switch: the test checks nothing")
	}
}

// TestKeyScheduleMoveIsLogged: each span of the key schedule is logged
// once, in order, by the first request that finds it current (16 ask at
// once at every step, for the race detector), or by a reload when none
// found it; neither a clock gone back nor a reload of the same schedule
// logs one again.
func TestKeyScheduleMoveIsLogged(t *testing.T) {
	k1, k2, k3 := generate("ES256"), generate("ES256"), generate("ES256")
	t0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	h := time.Hour
	clock := newClock(t0.Add(30 * time.Minute))
	logs, logger := testlog.New()
	cfg := scheduled("http://h/ids",
		issuer.KeyConfig{Key: k1.Private, RetireAt: t0.Add(3 * h)},
		issuer.KeyConfig{Key: k2.Private, PublishAt: t0, SignAt: t0.Add(h), RetireAt: t0.Add(4 * h)},
		issuer.KeyConfig{Key: k3.Private, PublishAt: t0.Add(2 * h), SignAt: t0.Add(3 * h)},
	)
	iss, err := issuer.New(cfg, issuer.WithClock(clock.now), issuer.WithLogger(logger))
	if err != nil {
		t.Fatal(err)
	}
	type line struct {
		Msg       string    `json:"msg"`
		From      time.Time `json:"from"`
		Signing   string    `json:"signing_kid"`
		Published []string  `json:"published_kids"`
	}
	moves := func() []line {
		var out []line
		for _, l := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
			var ln line
			if json.Unmarshal([]byte(l), &ln) == nil && ln.Msg == "idsauth issuer: the key schedule moved on" {
				out = append(out, ln)
			}
		}
		return out
	}
	tokenKID(t, iss) // one right secret first: its address is trusted, however many ask at once after
	var want []line
	for _, step := range []struct {
		at   time.Duration
		move *line // what this step logs
	}{
		{45 * time.Minute, nil}, // the span current at New: not a move
		{h, &line{From: t0.Add(h), Signing: k2.KID, Published: kidsOf(k1, k2)}},
		{h + time.Minute, nil},
		{30 * time.Minute, nil}, // the clock went back: the first span again, not logged
		{2 * h, &line{From: t0.Add(2 * h), Signing: k2.KID, Published: kidsOf(k1, k2, k3)}},
		{5 * h, &line{From: t0.Add(4 * h), Signing: k3.KID, Published: kidsOf(k3)}}, // 3h passed unseen
	} {
		clock.set(t0.Add(step.at))
		var wg sync.WaitGroup
		for range 16 {
			wg.Go(func() {
				if rec := askAdminToken(iss); rec.Code != http.StatusOK {
					t.Errorf("token: %d %s", rec.Code, rec.Body)
				}
			})
		}
		wg.Wait()
		if step.move != nil {
			want = append(want, *step.move)
		}
		got := moves()
		if len(got) != len(want) {
			t.Fatalf("at t0+%v: %d moves logged, want %d:\n%s", step.at, len(got), len(want), logs)
		}
		for i := range got {
			if !got[i].From.Equal(want[i].From) || got[i].Signing != want[i].Signing || !slices.Equal(got[i].Published, want[i].Published) {
				t.Errorf("move %d = %+v, want %+v", i, got[i], want[i])
			}
		}
	}
	// A new key is published from 5h30 and signs from 6h (a reload at 5h
	// logs nothing: no span of it has begun); at 7h, before any request,
	// a reload logs the span from 6h.
	k4 := generate("ES256")
	cfg.Keys[2].RetireAt = t0.Add(8 * h)
	cfg.Keys = append(cfg.Keys, issuer.KeyConfig{Key: k4.Private, PublishAt: t0.Add(5*h + 30*time.Minute), SignAt: t0.Add(6 * h)})
	if err := iss.Reload(cfg); err != nil {
		t.Fatal(err)
	}
	clock.set(t0.Add(7 * h))
	if err := iss.Reload(cfg); err != nil {
		t.Fatal(err)
	}
	want = append(want, line{From: t0.Add(6 * h), Signing: k4.KID, Published: kidsOf(k3, k4)})
	if got := moves(); len(got) != len(want) || !got[len(got)-1].From.Equal(want[len(want)-1].From) || got[len(got)-1].Signing != k4.KID {
		t.Fatalf("a switch that nothing found before a reload: moves %+v, want the last %+v", got, want[len(want)-1])
	}
	if err := iss.Reload(cfg); err != nil {
		t.Fatal(err)
	}
	tokenKID(t, iss)
	if got := moves(); len(got) != len(want) {
		t.Errorf("a reload of the same schedule logged a move: %d moves", len(got))
	}
}

// TestKeysWithoutSignAtKeepTheListOrder: keys without times sign in the
// list's order, and a key with publishAt alone is published, listed after
// the one that signs, without ever signing.
func TestKeysWithoutSignAtKeepTheListOrder(t *testing.T) {
	k1, k2 := generate("ES256"), generate("ES256")
	t0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := newClock(t0)
	iss, err := issuer.New(scheduled("http://h/ids", issuer.KeyConfig{Key: k1.Private}, issuer.KeyConfig{Key: k2.Private, PublishAt: t0.Add(time.Hour)}),
		issuer.WithClock(clock.now))
	if err != nil {
		t.Fatal(err)
	}
	for _, at := range []time.Duration{0, time.Hour, 1000 * time.Hour} {
		clock.set(t0.Add(at))
		if kid := tokenKID(t, iss); kid != k1.KID {
			t.Errorf("at t0%+v signed by %s, want the first key", at, kid)
		}
	}
	if got := jwksKIDs(t, iss); !slices.Equal(got, kidsOf(k1, k2)) {
		t.Errorf("JWKS %v", got)
	}
	if s := iss.KeySchedule(); !s[0].Signs || s[1].Signs {
		t.Errorf("KeySchedule %+v", s)
	}
}

// TestReloadKeepsTheKeysVersion: a reload that leaves the keys published
// now as they were keeps KeysVersion, mid-schedule, so that validators
// keep their cache; one that changes them changes it.
func TestReloadKeepsTheKeysVersion(t *testing.T) {
	k1, k2 := generate("ES256"), generate("ES256")
	t0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := newClock(t0.Add(30 * time.Minute))
	cfg := scheduled("http://h/ids",
		issuer.KeyConfig{Key: k1.Private, RetireAt: t0.Add(3 * time.Hour)},
		issuer.KeyConfig{Key: k2.Private, PublishAt: t0, SignAt: t0.Add(time.Hour)})
	iss, err := issuer.New(cfg, issuer.WithClock(clock.now))
	if err != nil {
		t.Fatal(err)
	}
	before := iss.KeysVersion()
	cfg.Clients = cfg.Clients[:2]
	if err := iss.Reload(cfg); err != nil {
		t.Fatal(err)
	}
	if v := iss.KeysVersion(); v != before {
		t.Fatalf("a reload of the same keys changed KeysVersion %d to %d", before, v)
	}
	clock.set(t0.Add(3 * time.Hour))
	retired := iss.KeysVersion()
	if retired == before {
		t.Fatal("retiring a key kept KeysVersion")
	}
	cfg.Keys[0].File, cfg.Keys[0].Key = "", generate("ES256").Private // k1 is gone: no change now
	if err := iss.Reload(cfg); err != nil || iss.KeysVersion() != retired {
		t.Fatalf("reload: %v, version %d after %d", err, iss.KeysVersion(), retired)
	}
	cfg.Keys = cfg.Keys[1:]
	cfg.Keys[0].PublishAt, cfg.Keys[0].SignAt = time.Time{}, time.Time{}
	if err := iss.Reload(cfg); err != nil || iss.KeysVersion() != retired {
		t.Fatalf("reload without the retired key: %v, version %d after %d", err, iss.KeysVersion(), retired)
	}
	cfg.Keys = append(cfg.Keys, issuer.KeyConfig{Key: k1.Private})
	if err := iss.Reload(cfg); err != nil || iss.KeysVersion() == retired {
		t.Fatalf("reload that publishes a key: %v, version %d after %d", err, iss.KeysVersion(), retired)
	}
}

// TestScheduledRotationUnderLoad drives the issuer's clock through a
// full rotation given in one configuration (the old key signs, the new
// one is published, the new one signs, the old one retires) while clients
// keep asking for tokens and a validator that fetches the JWKS over HTTP
// keeps checking them. The validator refreshes often (in real time), but
// never on an unknown kid: only the schedule keeps it from failing. At
// each step the test waits until the validator has fetched the JWKS
// again, as the schedule's margin (validatorRefreshSeconds +
// jwksMaxAgeSeconds) promises of a validator in production.
func TestScheduledRotationUnderLoad(t *testing.T) {
	k1, k2 := generate("ES256"), generate("EdDSA")
	publish := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	sign := publish.Add(10 * time.Minute) // the least the defaults allow
	retire := sign.Add(time.Hour)         // admin's tokens live an hour
	clock := newClock(publish.Add(-time.Minute))

	var fetches atomic.Int64 // JWKS requests started
	var iss *issuer.Issuer
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/jwks") {
			fetches.Add(1)
		}
		iss.ServeHTTP(w, r)
	}))
	defer srv.Close()
	cfg := scheduled(srv.URL+"/ids",
		issuer.KeyConfig{Key: k1.Private, RetireAt: retire},
		issuer.KeyConfig{Key: k2.Private, PublishAt: publish, SignAt: sign})
	iss, err := issuer.New(cfg, issuer.WithClock(clock.now))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	aud := []string{iss.URL() + "/resources"}
	published, err := accesstoken.NewJWKS(ctx, accesstoken.JWKSConfig{
		URL:               iss.JWKSURL(),
		RefreshInterval:   5 * time.Millisecond,
		RefreshUnknownKID: rate.NewLimiter(0, 0), // never
	})
	if err != nil {
		t.Fatal(err)
	}
	remote, err := accesstoken.New(ctx, accesstoken.Config{Issuer: iss.URL(), Audience: aud, Keys: published, Now: clock.now})
	if err != nil {
		t.Fatal(err)
	}
	var cached atomic.Int64
	local, err := accesstoken.New(ctx, accesstoken.Config{Issuer: iss.URL(), Audience: aud, Keys: iss, Now: clock.now,
		Observer: observe.Func(func(_ context.Context, e observe.Event) {
			if e.Kind == observe.ValidationSucceeded && e.Cached {
				cached.Add(1)
			}
		})})
	if err != nil {
		t.Fatal(err)
	}

	getToken := func() (string, error) {
		req, _ := http.NewRequest(http.MethodPost, iss.TokenURL(), strings.NewReader(
			form("grant_type", "client_credentials", "client_id", "admin", "client_secret", adminSecret, "scope", scope.AdminWebAPI)))
		req.Header.Set("Content-Type", formType)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		var body struct {
			AccessToken string `json:"access_token"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&body); err != nil || resp.StatusCode != 200 {
			return "", fmt.Errorf("token: %d %v", resp.StatusCode, err)
		}
		return body.AccessToken, nil
	}

	var failures, done atomic.Int64
	var firstFailure atomic.Value
	bySigner := map[string]*atomic.Int64{k1.KID: {}, k2.KID: {}}
	l := startLoad(4, func() {
		tok, err := getToken()
		if err == nil {
			if _, err = remote.Validate(ctx, tok, accesstoken.Presentation{}); err == nil {
				bySigner[headerKID(tok)].Add(1)
			}
		}
		if err != nil {
			failures.Add(1)
			firstFailure.CompareAndSwap(nil, err.Error())
		}
		done.Add(1)
	})
	// step sets the clock, then waits until the remote validator has
	// fetched the JWKS of that instant and every worker has finished two
	// more requests. The second fetch to start after the clock moved
	// began once the first was stored.
	step := func(at time.Time) {
		clock.set(at)
		for n := fetches.Load(); fetches.Load() < n+2; {
			time.Sleep(time.Millisecond)
		}
		l.settle()
	}
	var old string // a token of the old key that expires last
	for _, at := range []time.Time{
		publish.Add(-time.Second), publish, publish.Add(5 * time.Minute),
		sign.Add(-time.Second), sign, sign.Add(30 * time.Minute),
		retire.Add(-time.Second), retire, retire.Add(time.Minute),
	} {
		step(at)
		want := k1
		if !at.Before(sign) {
			want = k2
		}
		if signer := iss.KeyIDs()[0]; signer != want.KID {
			t.Errorf("at %s %s signs, want %s", rfc3339(at), signer, want.KID)
		}
		switch {
		case at.Equal(sign.Add(-time.Second)):
			if old, err = getToken(); err != nil {
				t.Fatal(err)
			}
		case at.Equal(retire.Add(-time.Second)):
			// It validates until the old key retires, from the cache the
			// second time.
			for range 2 {
				if _, err := remote.Validate(ctx, old, accesstoken.Presentation{}); err != nil {
					t.Fatalf("the old key's last token before it retires: %v", err)
				}
				if _, err := local.Validate(ctx, old, accesstoken.Presentation{}); err != nil {
					t.Fatalf("the old key's last token before it retires, in process: %v", err)
				}
			}
			if cached.Load() == 0 {
				t.Fatal("the validator in process did not cache the token")
			}
		case at.Equal(retire):
			// Expired a second ago, within the validators' 30 s of
			// leeway: only the retired key refuses it.
			for name, v := range map[string]*accesstoken.Validator{"remote": remote, "in process": local} {
				if _, err := v.Validate(ctx, old, accesstoken.Presentation{}); !errors.Is(err, accesstoken.ErrUnknownKey) {
					t.Errorf("%s: the token of a retired key: %v, want ErrUnknownKey", name, err)
				}
			}
		}
	}
	l.end()
	if failures.Load() != 0 {
		t.Fatalf("%d of %d validations failed during the rotation; the first: %v", failures.Load(), done.Load(), firstFailure.Load())
	}
	if bySigner[k1.KID].Load() == 0 || bySigner[k2.KID].Load() == 0 {
		t.Fatalf("validated %d tokens of the old key and %d of the new: the load did not span the rotation", bySigner[k1.KID].Load(), bySigner[k2.KID].Load())
	}
}
