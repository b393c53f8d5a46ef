package accesstoken

import (
	"fmt"
	"strings"
)

// TrustedIssuer is one of the issuers a Validator accepts tokens from, in
// Config.Issuers: as during a move from the product's
// IdentityServer to this module's issuer, when tokens of both are live.
// Its fields mean what the Config fields of the same names mean,
// for this issuer alone.
//
// The issuer of a token is the one whose Issuer is the token's "iss",
// byte for byte; its signature is checked with that issuer's keys alone,
// and its "aud" against that issuer's Audience. A token whose "iss" is no
// issuer's fails with ErrIssuer before any key is looked up, so it never
// causes a fetch. A Validator of one issuer (Config.Issuer)
// chooses the same way, from a list of one.
//
// To choose the keys, "iss" is read before the signature is checked, and
// that is all that is read: after the size cap (MaxTokenSize) and the
// header checks, the payload is decoded, split into its claims as a JSON
// object (names matched exactly, the last of duplicate names winning), and
// its "iss" alone is decoded to look the issuer up. Nothing else of the
// payload is used until that issuer's key has verified the signature;
// then every claim, "iss" included, is checked. An "iss" that did not
// verify is never reported, in an error or a log line.
//
// The scope claim needs nothing per issuer: a Validator reads both its
// forms, the string of RFC 9068 and IdentityServer's array, and "scp"
// when there is no "scope" (see Claims).
type TrustedIssuer struct {
	// Issuer is the "iss" of this issuer's tokens, e.g.
	// "https://host/ids"; required, and unique in the list. When neither
	// JWKSURL nor Keys is set, the JWKS URL is read from
	// {Issuer}/.well-known/openid-configuration, whose "issuer" must equal
	// Issuer exactly.
	Issuer string

	// JWKSURL is where this issuer's signing keys are published. Empty
	// means: found by discovery (unless Keys is set).
	JWKSURL string

	// Keys, when set, is this issuer's only source of keys (such as an
	// *issuer.Issuer in the same process): nothing is fetched for it. It
	// cannot be combined with JWKSURL.
	Keys KeySource

	// Audience is who this service is, as this issuer names it in "aud":
	// IdentityServer puts "{issuer}/resources" with EmitStaticAudienceClaim
	// on and the API resource names (e.g. "admin-api") with it off; this
	// module's issuer puts "{issuer}/resources" by default. Required
	// unless AnyAudience is set.
	Audience []string

	// AnyAudience accepts this issuer's tokens whatever their "aud"
	// says. It cannot be combined with Audience.
	AnyAudience bool
}

// issuerList returns the issuers of cfg, Issuer and its fields as a list
// of one when Issuers is empty, or an error naming the first field that
// is wrong.
func (cfg *Config) issuerList() ([]TrustedIssuer, error) {
	list, multi := cfg.Issuers, len(cfg.Issuers) > 0
	if !multi {
		list = []TrustedIssuer{{Issuer: cfg.Issuer, JWKSURL: cfg.JWKSURL, Keys: cfg.Keys, Audience: cfg.Audience, AnyAudience: cfg.AnyAudience}}
	} else if set := cfg.singleIssuerFields(); len(set) > 0 {
		return nil, fmt.Errorf("accesstoken: Config.Issuers cannot be combined with %s, which each of Issuers sets for itself", strings.Join(set, ", "))
	}
	seen := make(map[string]int, len(list))
	fetches := false
	for i, ti := range list {
		field := "Config."
		if multi {
			field = fmt.Sprintf("Config.Issuers[%d].", i)
		}
		if ti.Issuer == "" {
			return nil, fmt.Errorf("accesstoken: %sIssuer is required", field)
		}
		if j, dup := seen[ti.Issuer]; dup {
			return nil, fmt.Errorf("accesstoken: %sIssuer %q is Issuers[%d]'s too", field, ti.Issuer, j)
		}
		seen[ti.Issuer] = i
		switch {
		case len(ti.Audience) == 0 && !ti.AnyAudience:
			return nil, fmt.Errorf(`accesstoken: %sAudience is required (RFC 9068 §4): set it to what the issuer puts in "aud" (IdentityServer: "{issuer}/resources" or the API resource names), or set AnyAudience`, field)
		case len(ti.Audience) > 0 && ti.AnyAudience:
			return nil, fmt.Errorf("accesstoken: %sAudience and AnyAudience exclude each other", field)
		}
		if ti.Keys == nil {
			fetches = true
			continue
		}
		var fetchOnly []string
		if ti.JWKSURL != "" {
			fetchOnly = append(fetchOnly, "JWKSURL")
		}
		if !multi {
			fetchOnly = append(fetchOnly, cfg.fetchSettings()...)
		}
		if len(fetchOnly) > 0 {
			return nil, fmt.Errorf("accesstoken: %sKeys cannot be combined with %s, which only apply to a fetched JWKS", field, strings.Join(fetchOnly, ", "))
		}
	}
	if set := cfg.fetchSettings(); multi && !fetches && len(set) > 0 {
		return nil, fmt.Errorf("accesstoken: Config.Issuers all have Keys, so %s, which only apply to a fetched JWKS, cannot be set", strings.Join(set, ", "))
	}
	return list, nil
}

// singleIssuerFields names the fields of cfg, set, that Issuers replaces.
func (cfg *Config) singleIssuerFields() []string {
	var set []string
	for _, f := range []struct {
		name string
		set  bool
	}{
		{"Issuer", cfg.Issuer != ""},
		{"JWKSURL", cfg.JWKSURL != ""},
		{"Keys", cfg.Keys != nil},
		{"Audience", len(cfg.Audience) > 0},
		{"AnyAudience", cfg.AnyAudience},
	} {
		if f.set {
			set = append(set, f.name)
		}
	}
	return set
}

// fetchSettings names the settings of cfg, set, that only apply to a
// fetched JWKS.
func (cfg *Config) fetchSettings() []string {
	var set []string
	if cfg.HTTPClient != nil {
		set = append(set, "HTTPClient")
	}
	if cfg.FetchTimeout != 0 {
		set = append(set, "FetchTimeout")
	}
	if cfg.RefreshInterval != 0 {
		set = append(set, "RefreshInterval")
	}
	if cfg.RefreshUnknownKID != nil {
		set = append(set, "RefreshUnknownKID")
	}
	return set
}
