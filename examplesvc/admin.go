package main

import "net/http"

// The Admin API: users and groups of a data source, paged.

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

func (s *service) listUsers(w http.ResponseWriter, r *http.Request) {
	listOf(w, r, s.admin.usersOf)
}

func (s *service) listGroups(w http.ResponseWriter, r *http.Request) {
	listOf(w, r, s.admin.groupsOf)
}

// listOf answers one page of the request's data source's items, or 404
// for a data source that does not exist.
func listOf[T any](w http.ResponseWriter, r *http.Request, of func(ds string) ([]T, bool)) {
	items, ok := of(r.PathValue("datasourceId"))
	if !ok {
		problem(w, http.StatusNotFound, "unknown data source")
		return
	}
	pg, size, err := adminPage(r.URL.Query())
	if err != nil {
		problem(w, http.StatusBadRequest, err.Error())
		return
	}
	total := len(items)
	start, end := adminWindow(pg, size, total)
	writeJSON(w, http.StatusOK, page[T]{
		Data:          append([]T{}, items[start:end]...),
		PagingDetails: pagingDetails{Page: pg, PageSize: size, TotalPages: (total + size - 1) / size, TotalCount: total},
	})
}
