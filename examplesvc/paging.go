package main

import (
	"errors"
	"fmt"
	"net/url"
	"strconv"

	"github.com/idsauth/idsauth/scimerr"
)

// Paging of list answers: the Admin API's page and pageSize, and SCIM's
// startIndex and count (RFC 7644 §3.4.2.4). Every value is clamped before
// it takes part in arithmetic, so no query can overflow an int.

const (
	adminMaxPage     = 1 << 30 // fits a 32-bit int
	adminMaxPageSize = 1000
	adminDefaultSize = 10

	// scimMaxResults is the largest SCIM page; ServiceProviderConfig
	// advertises it as filter.maxResults.
	scimMaxResults   = 200
	scimDefaultCount = 100
)

// adminPage reads page (from 1, default 1) and pageSize (1 to 1000,
// default 10); a value outside those bounds is an error, not clamped,
// because the Admin API has always answered it with 400.
func adminPage(q url.Values) (pg, size int, err error) {
	if pg, err = boundedInt(q, "page", 1, 1, adminMaxPage); err != nil {
		return 0, 0, err
	}
	if size, err = boundedInt(q, "pageSize", adminDefaultSize, 1, adminMaxPageSize); err != nil {
		return 0, 0, err
	}
	return pg, size, nil
}

func boundedInt(q url.Values, name string, def, lo, hi int) (int, error) {
	v := q.Get(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < lo || n > hi {
		return 0, fmt.Errorf("%s must be a whole number from %d to %d", name, lo, hi)
	}
	return n, nil
}

// adminWindow returns the bounds of page pg (from 1) of size items in a
// list of total. (pg-1)*size is only computed when it is at most total.
func adminWindow(pg, size, total int) (start, end int) {
	start = total
	if pg-1 <= total/size {
		start = min((pg-1)*size, total)
	}
	return start, start + min(size, total-start)
}

// scimPage is the window a SCIM list asks for, already interpreted as RFC
// 7644 §3.4.2.4 says: start is at least 1, count is from 0 to
// scimMaxResults.
type scimPage struct {
	start, count int
}

// parseSCIMPage reads startIndex and count. A startIndex below 1 means 1;
// a negative count means 0 (totalResults only); a count above
// scimMaxResults means scimMaxResults. An integer too large for an int is
// clamped like any other; a value that is not an integer is a 400
// invalidValue.
func parseSCIMPage(q url.Values) (scimPage, error) {
	start, err := scimInt(q, "startIndex", 1)
	if err != nil {
		return scimPage{}, err
	}
	count, err := scimInt(q, "count", scimDefaultCount)
	if err != nil {
		return scimPage{}, err
	}
	return scimPage{start: max(start, 1), count: min(max(count, 0), scimMaxResults)}, nil
}

// scimInt reads an integer parameter. An out-of-range integer comes back
// saturated (strconv.ParseInt's documented result), so the caller's clamp
// handles it like any other large value.
func scimInt(q url.Values, name string, def int) (int, error) {
	v := q.Get(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.ParseInt(v, 10, 0)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return 0, scimerr.BadRequest(scimerr.InvalidValue, name+" must be an integer")
	}
	return int(n), nil
}

// window returns the bounds of the page within total results. start-1
// cannot underflow (start >= 1) and from+count cannot overflow (count is
// clamped to what is left).
func (p scimPage) window(total int) (from, to int) {
	from = min(p.start-1, total)
	return from, from + min(p.count, total-from)
}
