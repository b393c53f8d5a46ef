package pgregistry

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"

	"github.com/idsauth/idsauth/accesstoken"
	"github.com/idsauth/idsauth/issuer"
	"github.com/idsauth/idsauth/middleware"
	"github.com/idsauth/idsauth/secret"
)

// maxBody bounds a request's body: one registration.
const maxBody = 64 << 10

// ServeHTTP serves the administration API under the issuer's path, JSON
// in and out, to requests with a token of this issuer that carries the
// scope AdminScope and the audience {issuer}/admin (RequireBearer and
// RequireScope: 401 and 403 otherwise), JWT or reference token, asked
// about at each call: the token of an administrator removed from the
// file, or stripped of the scope, is refused at once. For clients, and
// alike for API resources under /apiresources (their ID is "name"):
//
//	GET    /ids/admin/clients                      list them
//	POST   /ids/admin/clients                      create one: 201
//	GET    /ids/admin/clients/{id}                 one
//	PUT    /ids/admin/clients/{id}                 replace its configuration
//	DELETE /ids/admin/clients/{id}                 remove it (or ?id={id})
//	POST   /ids/admin/clients/{id}/disable         refuse it, keep it
//	POST   /ids/admin/clients/{id}/enable          serve it again
//	POST   /ids/admin/clients/{id}/rotate-secret   a new secret, returned once
//
// A registration is the configuration file's JSON of one client (or API
// resource): create takes it whole, clientId included; one given no
// secretHashes and no other credential (publicKeys, jwksUri,
// tlsClientAuth, certificateThumbprints, federatedCredentials), or
// created with ?secret=generate, gets a new
// secret, returned once in "secret" (only its sha256 hash is stored), and
// one given secretHashes (sha256 or sha512: a client moved from the file)
// keeps them. PUT takes it without secretHashes: secrets change by
// rotate-secret, which adds a new one before the newest old one (the
// others are dropped), or, with {"keepPrevious": false}, in place of all.
// An ID is printable ASCII, not ".", ".." or "/", and one under ASCII case
// folding with the file's and the registry's; DELETE /ids/admin/clients?id=
// removes one stored before that rule that no path can name. An answer
// shows a registration as {"clientId", "disabled", "secrets" (how many),
// "createdAt", "updatedAt", "config"}, never a hash.
//
// Each change is one transaction with its audit row (who: the token's
// client_id; from where; what; when) and a notification that every
// replica loads at once: it has taken effect everywhere when the
// replicas have loaded it, within a second. Bad input is 400 with the
// field named as the file names it ({"error": "invalid_request",
// "field": "scopes[0]", "error_description": ...}), a clash with an
// existing registration or a file's client 409, an unknown one 404, and a
// database that does not answer 503 with Retry-After; nothing is written
// then.
func (r *Registry) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	r.admin.ServeHTTP(w, req)
}

// adminHandler is the administration API behind the issuer's own
// middleware, and its path.
func (r *Registry) adminHandler(ctx context.Context) (http.Handler, string, error) {
	iss := r.iss.URL()
	u, err := url.Parse(iss)
	if err != nil {
		return nil, "", err
	}
	prefix := strings.TrimSuffix(u.Path, "/") + "/admin"
	// Every token, JWT or reference, is asked about in process at each
	// call, uncached: the administrator's client removed, disabled or
	// stripped of AdminScope is refused at its next call.
	v, err := accesstoken.New(ctx, accesstoken.Config{Issuer: iss, Audience: []string{strings.TrimSuffix(iss, "/") + "/admin"},
		Introspection: &accesstoken.Introspection{ClientID: AdminScope, Local: adminTokens{r.iss}, CacheBytes: -1}})
	if err != nil {
		return nil, "", err
	}
	mux := http.NewServeMux()
	for _, k := range []kind{clientKind, apiKind} {
		a := api{r: r, k: k}
		base := prefix + "/" + k.path
		mux.HandleFunc("GET "+base, a.list)
		mux.HandleFunc("POST "+base, a.create)
		mux.HandleFunc("GET "+base+"/{id}", a.get)
		mux.HandleFunc("PUT "+base+"/{id}", a.update)
		mux.HandleFunc("DELETE "+base+"/{id}", a.remove)
		mux.HandleFunc("DELETE "+base, a.remove) // ?id=: an ID no path segment carries
		mux.HandleFunc("POST "+base+"/{id}/disable", a.disable(true))
		mux.HandleFunc("POST "+base+"/{id}/enable", a.disable(false))
		mux.HandleFunc("POST "+base+"/{id}/rotate-secret", a.rotate)
	}
	return middleware.RequireBearer(v)(middleware.RequireScope(AdminScope)(mux)), prefix, nil
}

// adminTokens asks the issuer about an administrator's token as it would
// answer an API resource of AdminScope.
type adminTokens struct{ iss *issuer.Issuer }

func (a adminTokens) IntrospectToken(ctx context.Context, _, token string) ([]byte, error) {
	return a.iss.IntrospectScopes(ctx, token, AdminScope)
}

// api serves the administration of one kind of registration.
type api struct {
	r *Registry
	k kind
}

// view is a registration as an answer shows it.
func (a api) view(id string, config []byte, hashes []string, disabled bool, created, updated time.Time) map[string]any {
	return map[string]any{a.k.idName: id, "disabled": disabled, "secrets": len(hashes),
		"createdAt": created.UTC().Format(time.RFC3339), "updatedAt": updated.UTC().Format(time.RFC3339), "config": json.RawMessage(config)}
}

const selectRow = `SELECT id, config::text, secret_hashes, disabled, created_at, updated_at FROM idsauth_registrations`

func (a api) list(w http.ResponseWriter, req *http.Request) {
	var out []map[string]any
	err := a.r.read(req, func(ctx context.Context, q pgx.Tx) error {
		rows, err := q.Query(ctx, selectRow+` WHERE kind = $1 ORDER BY id`, a.k.name)
		if err != nil {
			return err
		}
		var id, config string
		var hashes []string
		var disabled bool
		var created, updated time.Time
		_, err = pgx.ForEachRow(rows, []any{&id, &config, &hashes, &disabled, &created, &updated}, func() error {
			out = append(out, a.view(id, []byte(config), hashes, disabled, created, updated))
			return nil
		})
		return err
	})
	if err != nil {
		a.r.fail(w, err)
		return
	}
	if out == nil {
		out = []map[string]any{}
	}
	writeJSON(w, http.StatusOK, map[string]any{a.k.list: out})
}

func (a api) get(w http.ResponseWriter, req *http.Request) {
	id, err := requestID(req)
	if err != nil {
		a.r.fail(w, err)
		return
	}
	var v map[string]any
	err = a.r.read(req, func(ctx context.Context, q pgx.Tx) error {
		var err error
		v, _, err = a.one(ctx, q, id, false)
		return err
	})
	if err != nil {
		a.r.fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, v)
}

// one reads registration id, locked for a change when lock.
func (a api) one(ctx context.Context, q pgx.Tx, id string, lock bool) (map[string]any, []string, error) {
	query := selectRow + ` WHERE kind = $1 AND id = $2`
	if lock {
		query += ` FOR UPDATE`
	}
	var config string
	var hashes []string
	var disabled bool
	var created, updated time.Time
	err := q.QueryRow(ctx, query, a.k.name, id).Scan(&id, &config, &hashes, &disabled, &created, &updated)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil, errNotFound
	}
	if err != nil {
		return nil, nil, err
	}
	return a.view(id, []byte(config), hashes, disabled, created, updated), hashes, nil
}

func (a api) create(w http.ResponseWriter, req *http.Request) {
	in, fe := a.input(w, req)
	if fe != nil {
		a.r.fail(w, fe)
		return
	}
	generate, fe := a.generateSecret(req, in)
	if fe != nil {
		a.r.fail(w, fe)
		return
	}
	hashes, plain := append([]string{}, in.hashes...), "" // never NULL
	if generate {
		var h secret.Hash
		plain, h = secret.Generate()
		hashes = append(hashes, h.String())
	}
	if fe := a.r.check(a.k, in, hashes); fe != nil {
		a.r.fail(w, fe)
		return
	}
	var v map[string]any
	err := a.r.change(req, "create", a.k, in.id, map[string]any{"config": json.RawMessage(in.config), "secrets": len(hashes)}, func(ctx context.Context, tx pgx.Tx) error {
		// One create at a time, so that two IDs equal under ASCII case
		// folding cannot both pass the look for the other.
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, createLock); err != nil {
			return err
		}
		var same string
		err := tx.QueryRow(ctx, `SELECT id FROM idsauth_registrations WHERE kind = $1 AND `+foldSQL("id")+` = `+foldSQL("$2")+` LIMIT 1`, a.k.name, in.id).Scan(&same)
		switch {
		case err == nil:
			return &existsError{id: same}
		case !errors.Is(err, pgx.ErrNoRows):
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO idsauth_registrations (kind, id, config, secret_hashes) VALUES ($1, $2, $3, $4)`,
			a.k.name, in.id, string(in.config), hashes); err != nil {
			return err
		}
		v, _, err = a.one(ctx, tx, in.id, false)
		return err
	})
	if err != nil {
		a.r.fail(w, err)
		return
	}
	if plain != "" {
		v["secret"] = plain
	}
	writeJSON(w, http.StatusCreated, v)
}

func (a api) update(w http.ResponseWriter, req *http.Request) {
	in, fe := a.input(w, req)
	if fe != nil {
		a.r.fail(w, fe)
		return
	}
	id, err := requestID(req)
	if err != nil {
		a.r.fail(w, err)
		return
	}
	switch {
	case in.given:
		a.r.fail(w, badField("secretHashes", "secrets change by rotate-secret"))
		return
	case in.id != "" && in.id != id:
		a.r.fail(w, badField(a.k.idName, "differs from the path's: a registration is not renamed"))
		return
	}
	in.id = id
	var v map[string]any
	err = a.r.change(req, "update", a.k, id, map[string]any{"config": json.RawMessage(in.config)}, func(ctx context.Context, tx pgx.Tx) error {
		_, hashes, err := a.one(ctx, tx, id, true)
		if err != nil {
			return err
		}
		if fe := a.r.check(a.k, in, hashes); fe != nil {
			return fe
		}
		if _, err := tx.Exec(ctx, `UPDATE idsauth_registrations SET config = $3, updated_at = now() WHERE kind = $1 AND id = $2`, a.k.name, id, string(in.config)); err != nil {
			return err
		}
		v, _, err = a.one(ctx, tx, id, false)
		return err
	})
	if err != nil {
		a.r.fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, v)
}

// remove deletes the registration of the path's ID or of the query's id
// (see requestID).
func (a api) remove(w http.ResponseWriter, req *http.Request) {
	id, err := requestID(req)
	if err == nil && id == "" {
		err = badField("(query)", "id: the registration to remove")
	}
	if err != nil {
		a.r.fail(w, err)
		return
	}
	err = a.r.change(req, "delete", a.k, id, nil, func(ctx context.Context, tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `DELETE FROM idsauth_registrations WHERE kind = $1 AND id = $2`, a.k.name, id)
		if err == nil && tag.RowsAffected() == 0 {
			err = errNotFound
		}
		return err
	})
	if err != nil {
		a.r.fail(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (a api) disable(disabled bool) http.HandlerFunc {
	action := map[bool]string{true: "disable", false: "enable"}[disabled]
	return func(w http.ResponseWriter, req *http.Request) {
		id, err := requestID(req)
		if err != nil {
			a.r.fail(w, err)
			return
		}
		var v map[string]any
		err = a.r.change(req, action, a.k, id, nil, func(ctx context.Context, tx pgx.Tx) error {
			tag, err := tx.Exec(ctx, `UPDATE idsauth_registrations SET disabled = $3, updated_at = now() WHERE kind = $1 AND id = $2`, a.k.name, id, disabled)
			if err == nil && tag.RowsAffected() == 0 {
				err = errNotFound
			}
			if err == nil {
				v, _, err = a.one(ctx, tx, id, false)
			}
			return err
		})
		if err != nil {
			a.r.fail(w, err)
			return
		}
		writeJSON(w, http.StatusOK, v)
	}
}

func (a api) rotate(w http.ResponseWriter, req *http.Request) {
	id, err := requestID(req)
	if err != nil {
		a.r.fail(w, err)
		return
	}
	opts := struct {
		KeepPrevious *bool `json:"keepPrevious"`
	}{}
	body, err := io.ReadAll(http.MaxBytesReader(w, req.Body, maxBody))
	if err != nil {
		a.r.fail(w, badField("(body)", "%v", err))
		return
	}
	if len(strings.TrimSpace(string(body))) > 0 {
		dec := json.NewDecoder(strings.NewReader(string(body)))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&opts); err != nil {
			a.r.fail(w, badField("keepPrevious", "want {\"keepPrevious\": true or false}: %v", err))
			return
		}
	}
	keep := opts.KeepPrevious == nil || *opts.KeepPrevious
	plain, h := secret.Generate()
	var n int
	err = a.r.change(req, "rotate-secret", a.k, id, map[string]any{"keepPrevious": keep}, func(ctx context.Context, tx pgx.Tx) error {
		_, old, err := a.one(ctx, tx, id, true)
		if err != nil {
			return err
		}
		hashes := []string{h.String()}
		if keep && len(old) > 0 {
			hashes = append(hashes, old[0])
		}
		n = len(hashes)
		_, err = tx.Exec(ctx, `UPDATE idsauth_registrations SET secret_hashes = $3, updated_at = now() WHERE kind = $1 AND id = $2`, a.k.name, id, hashes)
		return err
	})
	if err != nil {
		a.r.fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{a.k.idName: id, "secret": plain, "secrets": n})
}

// requestID returns the ID a request names: its path's or, where the path
// has none (DELETE ...?id=, for an ID stored before the rule of
// registered IDs that no path carries), its query's. One that is not
// UTF-8 is errNotFound: the database holds none, and its refusal would
// be taken for an outage.
func requestID(req *http.Request) (string, error) {
	id := req.PathValue("id")
	if id == "" {
		id = req.URL.Query().Get("id")
	}
	if !utf8.ValidString(id) {
		return "", errNotFound
	}
	return id, nil
}

// input reads a request's registration.
func (a api) input(w http.ResponseWriter, req *http.Request) (*input, *fieldError) {
	body, err := io.ReadAll(http.MaxBytesReader(w, req.Body, maxBody))
	if err != nil {
		return nil, badField("(body)", "%v", err)
	}
	return readInput(a.k, body)
}

// generateSecret reports whether a create makes the registration a new
// secret: when asked (?secret=generate), or when it is given no
// credential at all; never a second credential it did not ask for, which
// would let it in without its certificate or key.
func (a api) generateSecret(req *http.Request, in *input) (bool, *fieldError) {
	switch req.URL.Query().Get("secret") {
	case "generate":
		return true, nil
	case "":
	default:
		return false, badField("(query)", `secret: want "generate" or nothing`)
	}
	if in.given {
		return false, nil
	}
	clients, apis, bad := decodeRows(a.k, []row{{id: in.id, config: in.config}})
	switch {
	case len(bad) > 0:
		return false, nil // check says what is wrong
	case len(clients) == 1:
		cc := clients[0]
		return len(cc.PublicKeys) == 0 && cc.TLSClientAuth == (issuer.TLSClientAuth{}) && len(cc.CertificateThumbprints) == 0 &&
			cc.JWKSURI == "" && len(cc.FederatedCredentials) == 0, nil
	default:
		ac := apis[0]
		return len(ac.PublicKeys) == 0 && ac.TLSClientAuth == (issuer.TLSClientAuth{}) && len(ac.CertificateThumbprints) == 0, nil
	}
}
