module github.com/idsauth/idsauth/cmd/idsauth

go 1.26.0

require (
	github.com/idsauth/idsauth v0.0.0
	github.com/idsauth/idsauth/redisstore v0.0.0-00010101000000-000000000000
	github.com/redis/go-redis/v9 v9.23.0
	golang.org/x/oauth2 v0.37.0
	golang.org/x/term v0.47.0
)

require (
	github.com/MicahParks/jwkset v0.11.3 // indirect
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/golang-jwt/jwt/v5 v5.3.1 // indirect
	go.uber.org/atomic v1.12.0 // indirect
	golang.org/x/crypto v0.58.0 // indirect
	golang.org/x/sys v0.49.0 // indirect
	golang.org/x/time v0.16.0 // indirect
)

// Inside the repository the command builds against the library beside
// it; a release requires the tagged versions (see RELEASING.md).
replace (
	github.com/idsauth/idsauth => ../..
	github.com/idsauth/idsauth/redisstore => ../../redisstore
)
