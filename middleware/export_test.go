package middleware

// IntrospectionWaiters is how many validations wait for the call in
// flight about token: the tests count it instead of guessing at timing.
func IntrospectionWaiters(in *Introspector, token string) int { return in.flights.waiting(token) }
