// Package pgregistry keeps an issuer's registered clients and API
// resources in PostgreSQL, beside its configuration file, and serves the
// administration API that manages them.
package pgregistry
