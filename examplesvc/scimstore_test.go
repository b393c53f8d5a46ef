package main

import (
	"errors"
	"strings"
	"testing"
)

// TestFoldUserNameMatchesEqualFold checks that two names share a key
// exactly when strings.EqualFold says they are equal, over every string
// of one or two runes drawn from runes whose folding is unusual.
func TestFoldUserNameMatchesEqualFold(t *testing.T) {
	runes := []string{
		"a", "A", "k", "K", "\u212a", // Kelvin sign folds to k
		"s", "S", "\u017f", // long s folds to s
		"ß", "\u1e9e", // sharp s and its capital; not "ss"
		"Σ", "σ", "ς", // three sigmas, one orbit
		"i", "I", "İ", "ı", // dotted and dotless i: four different orbits
		"å", "Å", "\u212b", // Angstrom sign folds to å
		"ǆ", "ǅ", "Ǆ", // a three-member orbit
		"é", "É", "\xff", "\xfe", "\ufffd", // invalid bytes decode as U+FFFD
		"1", "@",
	}
	var names []string
	for _, a := range runes {
		names = append(names, a)
		for _, b := range runes {
			names = append(names, a+b)
		}
	}
	keys := make([]string, len(names))
	for i, n := range names {
		keys[i] = foldUserName(n)
	}
	for i, a := range names {
		for j, b := range names {
			if got, want := keys[i] == keys[j], strings.EqualFold(a, b); got != want {
				t.Fatalf("%q, %q: same key %v, EqualFold %v", a, b, got, want)
			}
		}
	}
}

func TestSCIMStoreBound(t *testing.T) {
	s := newSCIMStore(2)
	for i, name := range []string{"a", "b"} {
		if err := s.create("acme", &scimUser{ID: name, UserName: name}); err != nil {
			t.Fatalf("create %d below the bound: %v", i, err)
		}
	}
	if err := s.create("acme", &scimUser{ID: "c", UserName: "c"}); !errors.Is(err, errTenantFull) {
		t.Fatalf("create past the bound: %v, want errTenantFull", err)
	}
	if err := s.create("other", &scimUser{ID: "c", UserName: "c"}); err != nil {
		t.Fatalf("a full tenant took another tenant's room: %v", err)
	}
	if !s.delete("acme", "a") {
		t.Fatal("delete failed")
	}
	if err := s.create("acme", &scimUser{ID: "c", UserName: "c"}); err != nil {
		t.Fatalf("a deleted user did not free its slot: %v", err)
	}
	if got, _ := s.page("acme", scimPage{1, scimMaxResults}); got != 2 {
		t.Fatalf("acme holds %d users, want 2", got)
	}
}

func TestSCIMStoreUserNameIndex(t *testing.T) {
	s := newSCIMStore(10)
	mustCreate := func(id, name string) {
		t.Helper()
		if err := s.create("acme", &scimUser{ID: id, UserName: name}); err != nil {
			t.Fatalf("create %q: %v", name, err)
		}
	}
	mustCreate("1", "Ødegård@example.com")
	mustCreate("2", "kari")
	mustCreate("3", "Straße")

	for _, taken := range []string{"øDEGÅRD@EXAMPLE.COM", "øDEG\u212bRD@example.com", "\u212aARI", "STRAẞE"} {
		if err := s.create("acme", &scimUser{ID: "x", UserName: taken}); !errors.Is(err, errUserNameTaken) {
			t.Errorf("create %q: %v, want errUserNameTaken", taken, err)
		}
	}
	if err := s.create("other", &scimUser{ID: "x", UserName: "KARI"}); err != nil {
		t.Errorf("userNames are unique per tenant, not across tenants: %v", err)
	}
	mustCreate("4", "STRASSE") // not EqualFold to Straße: simple folding only
	if u, ok := s.byUserName("acme", "ØDEGÅRD@Example.Com"); !ok || u.ID != "1" {
		t.Fatalf("byUserName = %v %v, want user 1", u.ID, ok)
	}

	rename := func(id, name string) error {
		_, err := s.replace("acme", id, func(scimUser) *scimUser { return &scimUser{UserName: name} })
		return err
	}
	if err := rename("2", "ØDEGÅRD@example.com"); !errors.Is(err, errUserNameTaken) {
		t.Fatalf("rename onto another user's name: %v", err)
	}
	if err := rename("1", "ødegård@EXAMPLE.com"); err != nil {
		t.Fatalf("a user could not change the case of its own name: %v", err)
	}
	if err := rename("1", "ola"); err != nil {
		t.Fatal(err)
	}
	if _, ok := s.byUserName("acme", "Ødegård@example.com"); ok {
		t.Fatal("the old name still finds the renamed user")
	}
	mustCreate("5", "ØDEGÅRD@example.com") // the old name is free again
	if !s.delete("acme", "2") {
		t.Fatal("delete failed")
	}
	mustCreate("6", "KARI") // and so is a deleted user's
	if err := rename("404", "x"); !errors.Is(err, errNoUser) {
		t.Fatalf("rename of a missing user: %v", err)
	}
	var order []string
	_, all := s.page("acme", scimPage{1, scimMaxResults})
	for _, u := range all {
		order = append(order, u.ID)
	}
	if got := strings.Join(order, ","); got != "1,3,4,5,6" {
		t.Fatalf("list order %s, want creation order 1,3,4,5,6", got)
	}
}
