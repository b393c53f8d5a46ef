package main

import (
	"crypto/rand"
	"encoding/json"
	"errors"
	"net/http"
	"regexp"
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
	seq         uint64    // creation order, set by scimStore
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
		"filter":         map[string]any{"supported": true, "maxResults": scimMaxResults},
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
	q := r.URL.Query()
	pg, err := parseSCIMPage(q)
	if err != nil {
		return err
	}
	tenant := r.PathValue("tenant")
	var (
		total int
		users []scimUser
	)
	if f := q.Get("filter"); f != "" {
		want, err := parseUserNameFilter(f)
		if err != nil {
			return err
		}
		var match []scimUser
		if u, ok := s.scim.byUserName(tenant, want); ok {
			match = []scimUser{u}
		}
		from, to := pg.window(len(match))
		total, users = len(match), append([]scimUser{}, match[from:to]...)
	} else {
		total, users = s.scim.page(tenant, pg)
	}
	return writeSCIM(w, http.StatusOK, map[string]any{
		"schemas":      []string{listSchema},
		"totalResults": total,
		"startIndex":   pg.start,
		"itemsPerPage": len(users),
		"Resources":    users,
	})
}

// parseUserNameFilter returns the value of the one filter supported,
// userName eq "value".
func parseUserNameFilter(f string) (string, error) {
	m := userNameFilter.FindStringSubmatch(f)
	if m == nil {
		return "", scimerr.BadRequest(scimerr.InvalidFilter, `only the filter userName eq "..." is supported`)
	}
	var v string
	if err := json.Unmarshal([]byte(`"`+m[1]+`"`), &v); err != nil {
		return "", scimerr.BadRequest(scimerr.InvalidFilter, "bad string in filter")
	}
	return v, nil
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

// storeErr turns the SCIM store's errors into SCIM errors.
func storeErr(err error) error {
	switch {
	case errors.Is(err, errUserNameTaken):
		return scimerr.Conflict(err.Error())
	case errors.Is(err, errNoUser):
		return scimerr.NotFound(err.Error())
	case errors.Is(err, errTenantFull):
		// 400 without a scimType: RFC 7644 has none for a quota, and a
		// 409 would tell provisioning clients the user already exists.
		return scimerr.New(http.StatusBadRequest, err.Error())
	}
	return err
}

func (s *service) scimCreateUser(w http.ResponseWriter, r *http.Request) error {
	u, err := readUser(w, r)
	if err != nil {
		return err
	}
	now := time.Now().UTC()
	u.Schemas = []string{userSchema}
	u.ID = rand.Text()
	u.Meta = &userMeta{ResourceType: "User", Created: now, LastModified: now, Location: r.URL.Path + "/" + u.ID}
	if err := s.scim.create(r.PathValue("tenant"), u); err != nil {
		return storeErr(err)
	}
	w.Header().Set("Location", u.Meta.Location)
	return writeSCIM(w, http.StatusCreated, u)
}

func (s *service) scimGetUser(w http.ResponseWriter, r *http.Request) error {
	u, ok := s.scim.get(r.PathValue("tenant"), r.PathValue("id"))
	if !ok {
		return storeErr(errNoUser)
	}
	return writeSCIM(w, http.StatusOK, u)
}

func (s *service) scimReplaceUser(w http.ResponseWriter, r *http.Request) error {
	u, err := readUser(w, r)
	if err != nil {
		return err
	}
	out, err := s.scim.replace(r.PathValue("tenant"), r.PathValue("id"), func(old scimUser) *scimUser {
		meta := *old.Meta
		meta.LastModified = time.Now().UTC()
		u.Schemas, u.Meta = []string{userSchema}, &meta
		return u
	})
	if err != nil {
		return storeErr(err)
	}
	return writeSCIM(w, http.StatusOK, out)
}

func (s *service) scimDeleteUser(w http.ResponseWriter, r *http.Request) error {
	if !s.scim.delete(r.PathValue("tenant"), r.PathValue("id")) {
		return storeErr(errNoUser)
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
