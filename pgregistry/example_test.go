package pgregistry_test

import (
	"context"
	"log"
	"net/http"
	"os"

	"github.com/idsauth/idsauth/issuer"
	"github.com/idsauth/idsauth/pgregistry"
)

// An issuer whose clients are its file's and those of a PostgreSQL shared
// by its replicas, with the administration API beside it. The database's
// URL, password included, comes from the environment.
func ExampleNew() {
	ctx := context.Background()
	cfg, err := issuer.LoadConfig("/etc/idsauth/idsauth.json") // its scopes hold pgregistry.AdminScope
	if err != nil {
		log.Fatal(err)
	}
	iss, err := issuer.New(cfg)
	if err != nil {
		log.Fatal(err)
	}
	url := os.Getenv("IDSAUTH_PG_URL")
	if _, _, err := pgregistry.Migrate(ctx, url); err != nil { // idempotent
		log.Fatal(err)
	}
	reg, err := pgregistry.New(ctx, pgregistry.Config{URL: url, Issuer: iss})
	if err != nil {
		log.Fatal(err)
	}
	defer reg.Close()
	mux := http.NewServeMux()
	mux.Handle("/ids/", iss)
	mux.Handle("/ids/admin/", reg) // the administration API, for the file's administrators
	log.Fatal(http.ListenAndServe(":8080", mux))
}
