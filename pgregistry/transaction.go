package pgregistry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/idsauth/idsauth/accesstoken"
)

// The transactions of the administration API, and its answers.

// errNotFound is the error of a change to a registration that does not
// exist.
var errNotFound = errors.New("not registered")

// createLock is the advisory lock that serializes creates.
const createLock = 0x1d5a_0002

// foldSQL folds the ASCII capitals of a text expression to lower case,
// whatever the database's collation, as the issuer folds IDs.
func foldSQL(expr string) string {
	return "translate(" + expr + ", 'ABCDEFGHIJKLMNOPQRSTUVWXYZ', 'abcdefghijklmnopqrstuvwxyz')"
}

// existsError is a create of an ID registered already, under ASCII case
// folding: as id.
type existsError struct{ id string }

func (e *existsError) Error() string { return fmt.Sprintf("already registered as %q", e.id) }

// read runs f in a read-only transaction, within the registry's bound.
func (r *Registry) read(req *http.Request, f func(context.Context, pgx.Tx) error) error {
	ctx, cancel := context.WithTimeout(req.Context(), r.timeout)
	defer cancel()
	tx, err := r.pool.BeginTx(ctx, pgx.TxOptions{AccessMode: pgx.ReadOnly})
	if err != nil {
		return err
	}
	defer tx.Rollback(context.Background()) //nolint:errcheck // read only
	return f(ctx, tx)
}

// change runs f, the audit row of the change, the generation's bump and
// the notification of it in one transaction, within the registry's bound,
// and logs the change once committed. detail is what the audit row says
// of it: never a secret or a hash.
func (r *Registry) change(req *http.Request, action string, k kind, target string, detail any, f func(context.Context, pgx.Tx) error) error {
	claims, _ := accesstoken.ClaimsFrom(req.Context())
	actor := ""
	if claims != nil {
		actor = claims.ClientID
	}
	addr := r.address(req)
	ctx, cancel := context.WithTimeout(req.Context(), r.timeout)
	defer cancel()
	tx, err := r.pool.BeginTx(ctx, pgx.TxOptions{})
	if err != nil {
		return err
	}
	defer tx.Rollback(context.Background()) //nolint:errcheck // after Commit, nothing
	if err := f(ctx, tx); err != nil {
		return err
	}
	var d any
	if detail != nil {
		b, err := json.Marshal(detail)
		if err != nil {
			return err
		}
		d = string(b)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO idsauth_audit (actor, address, action, kind, target, detail) VALUES ($1, $2, $3, $4, $5, $6::json)`,
		actor, addr, action, k.name, target, d); err != nil {
		return err
	}
	var gen int64
	if err := tx.QueryRow(ctx, `UPDATE idsauth_generation SET generation = generation + 1 RETURNING generation`).Scan(&gen); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, `SELECT pg_notify($1, $2)`, channel, fmt.Sprint(gen)); err != nil {
		return err
	}
	if err := tx.Commit(ctx); err != nil {
		return err
	}
	r.logger.Info("idsauth registry: changed", "action", action, "kind", k.name, "target", target,
		"actor", actor, "address", addr, "generation", gen)
	// Answered once in force here: the caller's next token request, to
	// this replica, meets the change. The others load it as their
	// notification comes.
	if !r.waitGeneration(ctx, gen) {
		r.logger.Warn("idsauth registry: a change is committed, and not loaded here yet", "generation", gen)
	}
	return nil
}

// fail answers err: a bad field, a clash, an unknown registration, or a
// database that does not answer (logged, without its password).
func (r *Registry) fail(w http.ResponseWriter, err error) {
	var fe *fieldError
	var exists *existsError
	switch {
	case errors.As(err, &fe):
		writeJSON(w, fe.status, map[string]string{"error": "invalid_request", "field": fe.field, "error_description": fe.field + ": " + fe.reason})
	case errors.As(err, &exists):
		desc := "already registered"
		if exists.id != "" {
			desc = fmt.Sprintf("already registered as %q (IDs are one under ASCII case folding)", exists.id)
		}
		writeJSON(w, http.StatusConflict, map[string]string{"error": "conflict", "error_description": desc})
	case errors.Is(err, errNotFound):
		writeJSON(w, http.StatusNotFound, map[string]string{"error": "not_found", "error_description": "not registered"})
	case errors.Is(err, context.Canceled):
		// The caller hung up (or the server is stopping): nobody reads
		// the answer, and the database is not to blame.
		w.WriteHeader(http.StatusServiceUnavailable)
	default:
		err = scrub(err, r.secret)
		desc := "the client registry's database does not answer: nothing was changed; try again"
		if isUndefinedTable(err) {
			desc = "the client registry's database is not migrated: run idsauth migrate"
		}
		// One line per 10 s: every call fails so while the database is
		// gone, and an administrator's loop would fill the log.
		if ok, held := r.failLogged.Allow(time.Now()); ok {
			r.logger.Warn("idsauth registry: an administration request failed: the database does not answer", "error", err.Error(), "suppressed", held)
		}
		w.Header().Set("Retry-After", "5")
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"error": "temporarily_unavailable", "error_description": desc})
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// remoteHost is the host of the request's RemoteAddr.
func remoteHost(req *http.Request) string {
	host, _, err := net.SplitHostPort(req.RemoteAddr)
	if err != nil {
		return req.RemoteAddr
	}
	return host
}
