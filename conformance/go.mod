module github.com/idsauth/idsauth/conformance

go 1.25.5

require (
	connectrpc.com/connect v1.21.0
	github.com/go-jose/go-jose/v4 v4.1.9
	github.com/idsauth/idsauth v0.1.0
	github.com/idsauth/idsauth/connectauth v0.1.0
	github.com/idsauth/idsauth/grpcauth v0.1.0
	github.com/idsauth/idsauth/mcpauth v0.1.0
	github.com/idsauth/idsauth/pgregistry v0.1.0
	github.com/idsauth/idsauth/redisstore v0.1.0
	github.com/jackc/pgx/v5 v5.12.0
	github.com/modelcontextprotocol/go-sdk v1.8.0
	github.com/prometheus/client_model v0.6.2
	github.com/redis/go-redis/v9 v9.22.0
	golang.org/x/oauth2 v0.36.0
	google.golang.org/grpc v1.84.0
)

require (
	github.com/MicahParks/keyfunc/v3 v3.9.0 // indirect
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/google/jsonschema-go v0.4.3 // indirect
	github.com/jackc/pgpassfile v1.0.0 // indirect
	github.com/jackc/pgservicefile v0.0.0-20240606120523-5a60cdf6a761 // indirect
	github.com/jackc/puddle/v2 v2.2.3 // indirect
	github.com/segmentio/asm v1.1.3 // indirect
	github.com/segmentio/encoding v0.5.4 // indirect
	github.com/yosida95/uritemplate/v3 v3.0.2 // indirect
	go.uber.org/atomic v1.12.0 // indirect
	golang.org/x/net v0.58.0 // indirect
	golang.org/x/sync v0.22.0 // indirect
	golang.org/x/sys v0.47.0 // indirect
	golang.org/x/text v0.41.0 // indirect
	google.golang.org/genproto/googleapis/rpc v0.0.0-20260817212433-ac3dfec99bb1 // indirect
)

require (
	github.com/MicahParks/jwkset v0.11.3 // indirect
	github.com/golang-jwt/jwt/v5 v5.3.1 // indirect
	github.com/munnerz/goautoneg v0.0.0-20191010083416-a7dc8b61c822 // indirect
	github.com/prometheus/common v0.70.0
	golang.org/x/crypto v0.55.0 // indirect
	golang.org/x/time v0.15.0 // indirect
	google.golang.org/protobuf v1.36.12
)

replace github.com/idsauth/idsauth => ../

replace (
	github.com/idsauth/idsauth/connectauth => ../connectauth
	github.com/idsauth/idsauth/grpcauth => ../grpcauth
	github.com/idsauth/idsauth/mcpauth => ../mcpauth
	github.com/idsauth/idsauth/pgregistry => ../pgregistry
	github.com/idsauth/idsauth/redisstore => ../redisstore
)
