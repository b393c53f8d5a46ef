package observe_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/idsauth/idsauth/observe"
)

func TestMulti(t *testing.T) {
	if observe.Multi() != nil || observe.Multi(nil, nil) != nil {
		t.Fatal("Multi of no observer is not nil: senders would do work for nobody")
	}
	var got []string
	named := func(name string) observe.Observer {
		return observe.Func(func(_ context.Context, e observe.Event) { got = append(got, name+":"+e.Kind.String()) })
	}
	a := named("a")
	if observe.Multi(nil, a) == nil {
		t.Fatal("Multi dropped its one observer")
	}
	m := observe.Multi(observe.Multi(a, named("b")), nil, named("c"))
	m.Observe(context.Background(), observe.Event{Kind: observe.TokenIssued})
	if fmt.Sprint(got) != "[a:token_issued b:token_issued c:token_issued]" {
		t.Fatalf("got %v", got)
	}
}

func TestKindString(t *testing.T) {
	seen := map[string]bool{}
	for k := observe.ValidationSucceeded; k <= observe.SCIMRefused; k++ {
		s := k.String()
		if s == "unknown" || seen[s] {
			t.Errorf("kind %d: %q", k, s)
		}
		seen[s] = true
	}
	if observe.Kind(0).String() != "unknown" || observe.Kind(200).String() != "unknown" {
		t.Error("an unknown kind has a name")
	}
}

// Count rejections by reason: an Observer is one method.
func ExampleFunc() {
	counts := map[string]int{}
	obs := observe.Func(func(_ context.Context, e observe.Event) {
		if e.Kind == observe.Rejected {
			counts[e.Reason]++ // a real one locks, or counts atomically
		}
	})
	// middleware.RequireBearerWithConfig(v, middleware.BearerConfig{Observer: obs})
	obs.Observe(context.Background(), observe.Event{Kind: observe.Rejected, Status: 401, Reason: "expired"})
	fmt.Println(counts)
	// Output: map[expired:1]
}
