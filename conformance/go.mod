module github.com/idsauth/idsauth/conformance

go 1.25.0

require (
	github.com/go-jose/go-jose/v4 v4.1.9
	github.com/idsauth/idsauth v0.1.0
	github.com/jackc/pgx/v5 v5.12.0
	github.com/prometheus/client_model v0.6.2
	golang.org/x/oauth2 v0.36.0
)

require (
	github.com/MicahParks/keyfunc/v3 v3.9.0 // indirect
	github.com/jackc/pgpassfile v1.0.0 // indirect
	github.com/jackc/pgservicefile v0.0.0-20240606120523-5a60cdf6a761 // indirect
	golang.org/x/text v0.41.0 // indirect
)

require (
	github.com/MicahParks/jwkset v0.11.3 // indirect
	github.com/golang-jwt/jwt/v5 v5.3.1 // indirect
	github.com/munnerz/goautoneg v0.0.0-20191010083416-a7dc8b61c822 // indirect
	github.com/prometheus/common v0.70.0
	golang.org/x/crypto v0.55.0 // indirect
	golang.org/x/time v0.15.0 // indirect
	google.golang.org/protobuf v1.36.12 // indirect
)

replace github.com/idsauth/idsauth => ../

replace (
	github.com/idsauth/idsauth/connectauth => ../connectauth
	github.com/idsauth/idsauth/grpcauth => ../grpcauth
	github.com/idsauth/idsauth/pgregistry => ../pgregistry
	github.com/idsauth/idsauth/redisstore => ../redisstore
)
