module github.com/idsauth/idsauth/cmd/idsauth

go 1.25.0

require (
	github.com/idsauth/idsauth v0.1.0
	github.com/idsauth/idsauth/pgregistry v0.1.0
	github.com/idsauth/idsauth/redisstore v0.1.0
	github.com/redis/go-redis/v9 v9.22.0
	golang.org/x/term v0.45.0
)

require (
	github.com/jackc/pgpassfile v1.0.0 // indirect
	github.com/jackc/pgservicefile v0.0.0-20240606120523-5a60cdf6a761 // indirect
	github.com/jackc/pgx/v5 v5.12.0 // indirect
	github.com/jackc/puddle/v2 v2.2.3 // indirect
	golang.org/x/sync v0.22.0 // indirect
	golang.org/x/text v0.41.0 // indirect
)

require (
	github.com/MicahParks/jwkset v0.11.3 // indirect
	github.com/MicahParks/keyfunc/v3 v3.9.0 // indirect
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/golang-jwt/jwt/v5 v5.3.1 // indirect
	go.uber.org/atomic v1.12.0 // indirect
	golang.org/x/crypto v0.55.0 // indirect
	golang.org/x/oauth2 v0.36.0 // indirect
	golang.org/x/sys v0.47.0 // indirect
	golang.org/x/time v0.15.0 // indirect
)

// Inside the repository the command builds against the library beside
// it; a release requires the tagged versions (see RELEASING.md).
replace (
	github.com/idsauth/idsauth => ../..
	github.com/idsauth/idsauth/pgregistry => ../../pgregistry
	github.com/idsauth/idsauth/redisstore => ../../redisstore
)
