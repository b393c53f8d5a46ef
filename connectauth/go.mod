module github.com/idsauth/idsauth/connectauth

go 1.25.0

require github.com/idsauth/idsauth v0.1.0

require (
	connectrpc.com/connect v1.21.0 // indirect
	google.golang.org/protobuf v1.36.12 // indirect
)

// Inside the repository the root module is the working tree. A build of
// this module as a dependency ignores the replace and takes the version
// required above, which must be tagged first (RELEASING.md).
replace github.com/idsauth/idsauth => ../
