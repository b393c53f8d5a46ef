package main

import "fmt"

type adminUser struct {
	ID       int    `json:"id"`
	UserName string `json:"userName"`
	Email    string `json:"email"`
}

type adminGroup struct {
	ID   int    `json:"id"`
	Name string `json:"name"`
}

// adminStore holds the data sources. It is filled once by newAdminStore
// and never written again, so its methods need no lock; the slices they
// return are shared and must not be modified.
type adminStore struct {
	users  map[string][]adminUser
	groups map[string][]adminGroup
}

func newAdminStore() *adminStore {
	s := &adminStore{users: map[string][]adminUser{}, groups: map[string][]adminGroup{}}
	for i := 1; i <= 25; i++ {
		s.users["demo"] = append(s.users["demo"], adminUser{ID: i, UserName: fmt.Sprintf("user%02d", i), Email: fmt.Sprintf("user%02d@example.com", i)})
	}
	for i, name := range []string{"Administrators", "Authors", "Reviewers"} {
		s.groups["demo"] = append(s.groups["demo"], adminGroup{ID: i + 1, Name: name})
	}
	return s
}

// hasDataSource reports whether the data source exists.
func (s *adminStore) hasDataSource(ds string) bool {
	_, ok := s.users[ds]
	return ok
}

// usersOf returns the users of data source ds, or false if there is no
// such data source.
func (s *adminStore) usersOf(ds string) ([]adminUser, bool) {
	u, ok := s.users[ds]
	return u, ok
}

// groupsOf returns the groups of data source ds, or false if there is no
// such data source.
func (s *adminStore) groupsOf(ds string) ([]adminGroup, bool) {
	g, ok := s.groups[ds]
	return g, ok
}
