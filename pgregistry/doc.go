// Package pgregistry keeps an issuer's registered clients and API
// resources in PostgreSQL, beside its configuration file, and serves the
// administration API that manages them: every replica loads them whole
// into its issuer (issuer.Issuer.SetRegistered) and follows each change
// by LISTEN/NOTIFY, so that no token request waits on the database and a
// database that goes away costs changes, not tokens.
//
// New starts a Registry for an issuer; Migrate brings a database to the
// schema it reads; the Registry is the http.Handler of the administration
// API (see Registry.ServeHTTP), guarded by the issuer's own tokens with
// the scope AdminScope. The operator's guide is the "Managing clients"
// section of docs/OPERATIONS.md.
package pgregistry
