package middleware

import "github.com/idsauth/idsauth/accesstoken"

// The token-deciding half of this package moved to package accesstoken;
// these names stay until every caller uses accesstoken's.
type (
	ValidatorConfig    = accesstoken.ValidatorConfig
	Validator          = accesstoken.Validator
	TrustedIssuer      = accesstoken.TrustedIssuer
	KeySource          = accesstoken.KeySource
	VersionedKeySource = accesstoken.VersionedKeySource
	IntrospectorConfig = accesstoken.IntrospectorConfig
	Introspector       = accesstoken.Introspector
	LocalIntrospector  = accesstoken.LocalIntrospector
	Claims             = accesstoken.Claims
	ValidationError    = accesstoken.ValidationError
)

const (
	DefaultMaxTokenSize                = accesstoken.DefaultMaxTokenSize
	DefaultFetchTimeout                = accesstoken.DefaultFetchTimeout
	MaxKeysPerToken                    = accesstoken.MaxKeysPerToken
	DefaultIntrospectionMaxAge         = accesstoken.DefaultIntrospectionMaxAge
	DefaultIntrospectionInactiveMaxAge = accesstoken.DefaultIntrospectionInactiveMaxAge
	DefaultIntrospectionCacheBytes     = accesstoken.DefaultIntrospectionCacheBytes
	DefaultMaxConcurrentIntrospections = accesstoken.DefaultMaxConcurrentIntrospections
	MaxIntrospectedTokenLength         = accesstoken.MaxIntrospectedTokenLength
)

var (
	NewValidator      = accesstoken.NewValidator
	NewIntrospector   = accesstoken.NewIntrospector
	NewClaims         = accesstoken.NewClaims
	DefaultAlgorithms = accesstoken.DefaultAlgorithms

	ErrTooLarge                 = accesstoken.ErrTooLarge
	ErrMalformed                = accesstoken.ErrMalformed
	ErrAlgorithm                = accesstoken.ErrAlgorithm
	ErrCritical                 = accesstoken.ErrCritical
	ErrType                     = accesstoken.ErrType
	ErrUnknownKey               = accesstoken.ErrUnknownKey
	ErrAmbiguousKey             = accesstoken.ErrAmbiguousKey
	ErrKeysUnavailable          = accesstoken.ErrKeysUnavailable
	ErrSignature                = accesstoken.ErrSignature
	ErrExpired                  = accesstoken.ErrExpired
	ErrNotYetValid              = accesstoken.ErrNotYetValid
	ErrIssuedInFuture           = accesstoken.ErrIssuedInFuture
	ErrMissingClaim             = accesstoken.ErrMissingClaim
	ErrIssuer                   = accesstoken.ErrIssuer
	ErrAudience                 = accesstoken.ErrAudience
	ErrScopeClaim               = accesstoken.ErrScopeClaim
	ErrScopeName                = accesstoken.ErrScopeName
	ErrBoundToken               = accesstoken.ErrBoundToken
	ErrInactive                 = accesstoken.ErrInactive
	ErrIntrospectionUnavailable = accesstoken.ErrIntrospectionUnavailable
)
