module github.com/idsauth/idsauth/internal/releasetest

go 1.25.0

require golang.org/x/mod v0.40.0
