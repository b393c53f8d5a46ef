package idsauthotel_test

import (
	"context"
	"fmt"
	"log"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/idsauth/idsauth/idsauthotel"
	"github.com/idsauth/idsauth/observe"
)

// Give one Observer to the Validator, the middleware and the issuer; here
// it records one event by hand, as RequireBearer would for a request
// without a token.
func ExampleNew() {
	reader := sdkmetric.NewManualReader()
	obs, err := idsauthotel.New(idsauthotel.Config{
		MeterProvider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)),
		// TracerProvider: nil, the global one.
	})
	if err != nil {
		log.Fatal(err)
	}
	// In a service:
	//   accesstoken.Config{..., Observer: obs}
	//   middleware.BearerConfig{Observer: obs}, middleware.SCIMConfig{Observer: obs}
	//   issuer.New(cfg, issuer.WithObserver(obs))
	obs.Observe(context.Background(), observe.Event{Kind: observe.Rejected, Status: 401, Reason: "no_token"})

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		log.Fatal(err)
	}
	for _, m := range rm.ScopeMetrics[0].Metrics {
		for _, p := range m.Data.(metricdata.Sum[int64]).DataPoints {
			reason, _ := p.Attributes.Value(idsauthotel.AttrReason)
			fmt.Println(m.Name, reason.AsString(), p.Value)
		}
	}
	// Output: idsauth.rejections no_token 1
}
