package metrics_test

import (
	"context"
	"os"

	"github.com/idsauth/idsauth/metrics"
	"github.com/idsauth/idsauth/observe"
)

func Example() {
	m := metrics.New()
	// Give m to the validator (accesstoken.Config.Observer), the middleware
	// (BearerConfig.Observer, SCIMConfig.Observer) and the issuer
	// (issuer.WithObserver), and serve it: opsMux.Handle("GET /metrics", m).
	m.Observe(context.Background(), observe.Event{Kind: observe.Rejected, Reason: "no_token", Status: 401})
	m.WriteTo(os.Stdout)
	// Output:
	// # HELP idsauth_rejections_total Requests that RequireBearer or RequireScope refused, by reason and HTTP status.
	// # TYPE idsauth_rejections_total counter
	// idsauth_rejections_total{reason="no_token",status="401"} 1
}
