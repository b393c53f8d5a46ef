package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
)

// The Admin API: users and groups of a data source, paged.

type adminUser struct {
	ID       int    `json:"id"`
	UserName string `json:"userName"`
	Email    string `json:"email"`
}

type adminGroup struct {
	ID   int    `json:"id"`
	Name string `json:"name"`
}

// adminStore holds the data sources. It is read-only after start, so it
// needs no lock.
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

type pagingDetails struct {
	Page       int `json:"page"`
	PageSize   int `json:"pageSize"`
	TotalPages int `json:"totalPages"`
	TotalCount int `json:"totalCount"`
}

type page[T any] struct {
	Data          []T           `json:"data"`
	PagingDetails pagingDetails `json:"pagingDetails"`
}

// paginate answers one page of items, reading page (from 1, default 1)
// and pageSize (1 to 1000, default 10) from the query.
func paginate[T any](w http.ResponseWriter, r *http.Request, items []T) {
	pg, err := queryInt(r, "page", 1, 1, 1<<30)
	if err != nil {
		problem(w, http.StatusBadRequest, err.Error())
		return
	}
	size, err := queryInt(r, "pageSize", 10, 1, 1000)
	if err != nil {
		problem(w, http.StatusBadRequest, err.Error())
		return
	}
	total := len(items)
	start := min((pg-1)*size, total)
	end := min(start+size, total)
	writeJSON(w, http.StatusOK, page[T]{
		Data:          append([]T{}, items[start:end]...),
		PagingDetails: pagingDetails{Page: pg, PageSize: size, TotalPages: (total + size - 1) / size, TotalCount: total},
	})
}

func queryInt(r *http.Request, name string, def, lo, hi int) (int, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < lo || n > hi {
		return 0, fmt.Errorf("%s must be a whole number from %d to %d", name, lo, hi)
	}
	return n, nil
}

func (s *service) listUsers(w http.ResponseWriter, r *http.Request) {
	listOf(w, r, s.admin.users)
}

func (s *service) listGroups(w http.ResponseWriter, r *http.Request) {
	listOf(w, r, s.admin.groups)
}

// listOf answers one page of the request's data source's items, or 404
// for a data source that does not exist.
func listOf[T any](w http.ResponseWriter, r *http.Request, byDataSource map[string][]T) {
	items, ok := byDataSource[r.PathValue("datasourceId")]
	if !ok {
		problem(w, http.StatusNotFound, "unknown data source")
		return
	}
	paginate(w, r, items)
}

// writeJSON writes v as the JSON answer.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// problem writes an RFC 9457 problem answer.
func problem(w http.ResponseWriter, status int, detail string) {
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{
		"type": "about:blank", "title": http.StatusText(status), "status": status, "detail": detail,
	})
}

func notFound(w http.ResponseWriter, r *http.Request) {
	problem(w, http.StatusNotFound, "no such endpoint")
}
