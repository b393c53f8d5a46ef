module github.com/idsauth/idsauth

go 1.26.0

require (
	github.com/MicahParks/jwkset v0.11.3 // indirect
	github.com/MicahParks/keyfunc/v3 v3.9.0 // indirect
	github.com/golang-jwt/jwt/v5 v5.3.1 // indirect
	github.com/justinas/alice v1.2.0 // indirect
	golang.org/x/crypto v0.58.0 // indirect
	golang.org/x/oauth2 v0.37.0 // indirect
	golang.org/x/time v0.16.0 // indirect
)
