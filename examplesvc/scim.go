package main

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/idsauth/idsauth/scimerr"
)

// SCIM 2.0 users (RFC 7643, RFC 7644), per tenant, in memory.

const (
	userSchema = "urn:ietf:params:scim:schemas:core:2.0:User"
	listSchema = "urn:ietf:params:scim:api:messages:2.0:ListResponse"
)

type scimUser struct {
	Schemas     []string  `json:"schemas"`
	ID          string    `json:"id"`
	ExternalID  string    `json:"externalId,omitempty"`
	UserName    string    `json:"userName"`
	DisplayName string    `json:"displayName,omitempty"`
	Active      *bool     `json:"active,omitempty"`
	Emails      []email   `json:"emails,omitempty"`
	Meta        *userMeta `json:"meta,omitempty"`
}

type email struct {
	Value   string `json:"value"`
	Type    string `json:"type,omitempty"`
	Primary bool   `json:"primary,omitempty"`
}

type userMeta struct {
	ResourceType string    `json:"resourceType"`
	Created      time.Time `json:"created"`
	LastModified time.Time `json:"lastModified"`
	Location     string    `json:"location"`
}

// userName is compared without case (RFC 7643 §4.1.1, caseExact false).
type scimStore struct {
	mu    sync.Mutex
	users map[string]map[string]*scimUser // tenant → id → user
}

func newSCIMStore() *scimStore { return &scimStore{users: map[string]map[string]*scimUser{}} }

func writeSCIM(w http.ResponseWriter, status int, v any) error {
	w.Header().Set("Content-Type", scimerr.ContentType)
	w.WriteHeader(status)
	return json.NewEncoder(w).Encode(v)
}

func scimNotFound(w http.ResponseWriter, r *http.Request) error {
	return scimerr.NotFound("no such SCIM endpoint")
}

func serviceProviderConfig(w http.ResponseWriter, r *http.Request) error {
	no := map[string]bool{"supported": false}
	return writeSCIM(w, http.StatusOK, map[string]any{
		"schemas":        []string{"urn:ietf:params:scim:schemas:core:2.0:ServiceProviderConfig"},
		"patch":          no,
		"bulk":           map[string]any{"supported": false, "maxOperations": 0, "maxPayloadSize": 0},
		"filter":         map[string]any{"supported": true, "maxResults": 200},
		"changePassword": no,
		"sort":           no,
		"etag":           no,
		"authenticationSchemes": []map[string]any{{
			"type":        "oauthbearertoken",
			"name":        "OAuth Bearer Token",
			"description": "A per-tenant bearer token in the Authorization header",
			"specUri":     "https://www.rfc-editor.org/rfc/rfc6750",
			"primary":     true,
		}},
	})
}

// userNameFilter is the one filter supported: userName eq "value".
var userNameFilter = regexp.MustCompile(`^\s*(?i:userName)\s+(?i:eq)\s+"((?:[^"\\]|\\.)*)"\s*$`)

func (s *service) scimListUsers(w http.ResponseWriter, r *http.Request) error {
	var want *string
	if f := r.URL.Query().Get("filter"); f != "" {
		m := userNameFilter.FindStringSubmatch(f)
		if m == nil {
			return scimerr.BadRequest(scimerr.InvalidFilter, `only the filter userName eq "..." is supported`)
		}
		var v string
		if err := json.Unmarshal([]byte(`"`+m[1]+`"`), &v); err != nil {
			return scimerr.BadRequest(scimerr.InvalidFilter, "bad string in filter")
		}
		want = &v
	}
	start, count := 1, 100
	for name, p := range map[string]*int{"startIndex": &start, "count": &count} {
		if v := r.URL.Query().Get(name); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 {
				return scimerr.BadRequest(scimerr.InvalidValue, name+" must be a non-negative integer")
			}
			*p = n
		}
	}
	start = max(start, 1)

	s.scim.mu.Lock()
	var all []scimUser
	for _, u := range s.scim.users[r.PathValue("tenant")] {
		if want == nil || strings.EqualFold(u.UserName, *want) {
			all = append(all, *u)
		}
	}
	s.scim.mu.Unlock()
	slices.SortFunc(all, func(a, b scimUser) int { return a.Meta.Created.Compare(b.Meta.Created) })

	from := min(start-1, len(all))
	to := min(from+count, len(all))
	return writeSCIM(w, http.StatusOK, map[string]any{
		"schemas":      []string{listSchema},
		"totalResults": len(all),
		"startIndex":   start,
		"itemsPerPage": to - from,
		"Resources":    append([]scimUser{}, all[from:to]...),
	})
}

func readUser(w http.ResponseWriter, r *http.Request) (*scimUser, error) {
	var u scimUser
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 64<<10)).Decode(&u); err != nil {
		return nil, scimerr.BadRequest(scimerr.InvalidSyntax, "the body is not a SCIM user")
	}
	if u.UserName == "" {
		return nil, scimerr.BadRequest(scimerr.InvalidValue, "userName is required")
	}
	return &u, nil
}

func (s *service) scimCreateUser(w http.ResponseWriter, r *http.Request) error {
	u, err := readUser(w, r)
	if err != nil {
		return err
	}
	tenant := r.PathValue("tenant")
	var b [16]byte
	_, _ = rand.Read(b[:])
	now := time.Now().UTC()
	u.Schemas = []string{userSchema}
	u.ID = hex.EncodeToString(b[:])
	u.Meta = &userMeta{ResourceType: "User", Created: now, LastModified: now, Location: r.URL.Path + "/" + u.ID}

	s.scim.mu.Lock()
	defer s.scim.mu.Unlock()
	users := s.scim.users[tenant]
	if users == nil {
		users = map[string]*scimUser{}
		s.scim.users[tenant] = users
	}
	for _, other := range users {
		if strings.EqualFold(other.UserName, u.UserName) {
			return scimerr.Conflict("userName is already taken")
		}
	}
	users[u.ID] = u
	w.Header().Set("Location", u.Meta.Location)
	return writeSCIM(w, http.StatusCreated, u)
}

func (s *service) scimGetUser(w http.ResponseWriter, r *http.Request) error {
	s.scim.mu.Lock()
	u, ok := s.scim.users[r.PathValue("tenant")][r.PathValue("id")]
	var out scimUser
	if ok {
		out = *u
	}
	s.scim.mu.Unlock()
	if !ok {
		return scimerr.NotFound("no user with that id")
	}
	return writeSCIM(w, http.StatusOK, out)
}

func (s *service) scimReplaceUser(w http.ResponseWriter, r *http.Request) error {
	u, err := readUser(w, r)
	if err != nil {
		return err
	}
	s.scim.mu.Lock()
	defer s.scim.mu.Unlock()
	users := s.scim.users[r.PathValue("tenant")]
	old, ok := users[r.PathValue("id")]
	if !ok {
		return scimerr.NotFound("no user with that id")
	}
	for id, other := range users {
		if id != old.ID && strings.EqualFold(other.UserName, u.UserName) {
			return scimerr.Conflict("userName is already taken")
		}
	}
	meta := *old.Meta
	meta.LastModified = time.Now().UTC()
	u.Schemas, u.ID, u.Meta = []string{userSchema}, old.ID, &meta
	users[old.ID] = u
	return writeSCIM(w, http.StatusOK, u)
}

func (s *service) scimDeleteUser(w http.ResponseWriter, r *http.Request) error {
	s.scim.mu.Lock()
	defer s.scim.mu.Unlock()
	users := s.scim.users[r.PathValue("tenant")]
	if _, ok := users[r.PathValue("id")]; !ok {
		return scimerr.NotFound("no user with that id")
	}
	delete(users, r.PathValue("id"))
	w.WriteHeader(http.StatusNoContent)
	return nil
}
