package accesstoken

import (
	"context"
	"errors"
	"net/url"

	"github.com/MicahParks/jwkset"

	"github.com/idsauth/idsauth/observe"
)

// send gives e to o, if there is one.
func send(ctx context.Context, o observe.Observer, e observe.Event) {
	if o != nil {
		o.Observe(ctx, e)
	}
}

// fetchFailure classifies a failed JWKS fetch for a KeysFetchFailed
// event: its error holds a URL and a server's words, an event neither.
func fetchFailure(err error) string {
	var ue *url.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ue) && ue.Timeout():
		return "timeout"
	case ue != nil:
		return "transport"
	case errors.Is(err, jwkset.ErrInvalidHTTPStatusCode):
		return "http_status"
	}
	return "invalid"
}
