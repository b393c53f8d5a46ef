module github.com/idsauth/idsauth/mcpauth

go 1.25.5

require (
	github.com/MicahParks/keyfunc/v3 v3.9.0
	github.com/golang-jwt/jwt/v5 v5.3.1
	github.com/idsauth/idsauth v0.1.0
	github.com/mark3labs/mcp-go v1.2.1
	github.com/modelcontextprotocol/go-sdk v1.8.0
	golang.org/x/oauth2 v0.36.0
)

require (
	github.com/MicahParks/jwkset v0.11.3 // indirect
	github.com/google/jsonschema-go v0.4.3 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/santhosh-tekuri/jsonschema/v6 v6.0.2 // indirect
	github.com/segmentio/asm v1.1.3 // indirect
	github.com/segmentio/encoding v0.5.4 // indirect
	github.com/spf13/cast v1.7.1 // indirect
	github.com/yosida95/uritemplate/v3 v3.0.2 // indirect
	golang.org/x/crypto v0.55.0 // indirect
	golang.org/x/sync v0.22.0 // indirect
	golang.org/x/sys v0.47.0 // indirect
	golang.org/x/text v0.41.0 // indirect
	golang.org/x/time v0.15.0 // indirect
)

// Inside the repository the root module is the working tree. A build of
// this module as a dependency ignores the replace and takes the version
// required above, which must be tagged first (RELEASING.md).
replace github.com/idsauth/idsauth => ../
