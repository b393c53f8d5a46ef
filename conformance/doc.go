// Package conformance holds the tests that check idsauth against other
// implementations' own code: Prometheus's text parser reads the metrics.
// It is a module of its own, never published, so that what those tests
// import stays out of idsauth's go.mod.
package conformance
