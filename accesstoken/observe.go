package accesstoken

import (
	"context"

	"github.com/idsauth/idsauth/observe"
)

// send gives e to o, if there is one.
func send(ctx context.Context, o observe.Observer, e observe.Event) {
	if o != nil {
		o.Observe(ctx, e)
	}
}
