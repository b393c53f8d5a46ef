package accesstoken

// IntrospectionWaiters is how many validations wait for the call in
// flight about token: the tests count it instead of guessing at timing.
func IntrospectionWaiters(v *Validator, token string) int { return v.in.flights.waiting(token) }

// SignatureChecks is how many signature checks v has made: the tests
// count them instead of timing validations.
func SignatureChecks(v *Validator) uint64 { return v.checks.Load() }
