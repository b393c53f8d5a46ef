package accesstoken

// IntrospectionWaiters is how many validations wait for the call in
// flight about token: the tests count it instead of guessing at timing.
func IntrospectionWaiters(v *Validator, token string) int { return v.in.flights.waiting(token) }

// SignatureChecks is how many signature checks v has made: the tests
// count them instead of timing validations.
func SignatureChecks(v *Validator) uint64 { return v.sigChecks.Load() }

// The reasons known outside by their codes alone, for the tests'
// errors.Is.
var (
	ErrTooLarge         = errTooLarge
	ErrMalformed        = errMalformed
	ErrAlgorithm        = errAlgorithm
	ErrCritical         = errCritical
	ErrType             = errType
	ErrAmbiguousKey     = errAmbiguousKey
	ErrSignature        = errSignature
	ErrNotYetValid      = errNotYetValid
	ErrIssuedInFuture   = errIssuedInFuture
	ErrMissingClaim     = errMissingClaim
	ErrIssuer           = errIssuer
	ErrAudience         = errAudience
	ErrScopeClaim       = errScopeClaim
	ErrScopeName        = errScopeName
	ErrBoundToken       = errBoundToken
	ErrUnboundToken     = errUnboundToken
	ErrWrongCertificate = errWrongCertificate
)
