module github.com/idsauth/idsauth

go 1.25.0

require (
	github.com/MicahParks/jwkset v0.11.3
	github.com/MicahParks/keyfunc/v3 v3.9.0
	github.com/golang-jwt/jwt/v5 v5.3.1
	github.com/justinas/alice v1.2.0
	golang.org/x/crypto v0.55.0
	golang.org/x/oauth2 v0.36.0
	golang.org/x/time v0.15.0
)
