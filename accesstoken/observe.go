package accesstoken

import (
	"context"
	"errors"
	"net/url"
	"time"

	"github.com/MicahParks/jwkset"

	"github.com/idsauth/idsauth/observe"
)

// startTimer starts timing a validation, if there is an observer to tell.
func (v *Validator) startTimer() time.Time {
	if v.observer == nil {
		return time.Time{}
	}
	return time.Now()
}

// succeeded reports a validation that passed, from the cache or not. It
// and failed cost a comparison without an observer: they inline, and
// leave the work to report.
func (v *Validator) succeeded(ctx context.Context, start time.Time, cached bool) {
	if v.observer != nil {
		v.report(ctx, start, cached, nil)
	}
}

// failed reports a validation that failed with err, and returns err.
func (v *Validator) failed(ctx context.Context, start time.Time, err error) error {
	if v.observer != nil {
		v.report(ctx, start, false, err)
	}
	return err
}

func (v *Validator) report(ctx context.Context, start time.Time, cached bool, err error) {
	e := observe.Event{Kind: observe.ValidationSucceeded, Cached: cached, Duration: time.Since(start)}
	if err != nil {
		e.Kind, e.Reason = observe.ValidationFailed, "other"
		if ve, ok := err.(*ValidationError); ok {
			e.Reason = ve.Code
		}
	}
	v.observer.Observe(ctx, e)
}

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
		return observe.FetchFailureTimeout
	case ue != nil:
		return observe.FetchFailureTransport
	case errors.Is(err, jwkset.ErrInvalidHTTPStatusCode):
		return observe.FetchFailureStatus
	}
	return observe.FetchFailureInvalid
}
