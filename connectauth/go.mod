module github.com/idsauth/idsauth/connectauth

go 1.25.0

require (
	connectrpc.com/connect v1.21.0
	github.com/idsauth/idsauth v0.1.0
	google.golang.org/genproto/googleapis/rpc v0.0.0-20260817212433-ac3dfec99bb1
	google.golang.org/protobuf v1.36.12
)

require (
	github.com/MicahParks/jwkset v0.11.3 // indirect
	github.com/MicahParks/keyfunc/v3 v3.9.0 // indirect
	github.com/golang-jwt/jwt/v5 v5.3.1 // indirect
	golang.org/x/crypto v0.55.0 // indirect
	golang.org/x/oauth2 v0.36.0 // indirect
	golang.org/x/time v0.15.0 // indirect
)

// Inside the repository the root module is the working tree. A build of
// this module as a dependency ignores the replace and takes the version
// required above, which must be tagged first (RELEASING.md).
replace github.com/idsauth/idsauth => ../
