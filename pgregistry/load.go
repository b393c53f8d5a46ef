package pgregistry

// Loading: a replica brings its issuer to the database's generation,
// applying the rows changed since its own as a change
// (issuer.UpdateRegistered), or every row when it cannot (its first load,
// a gap wider than the tombstones kept, a change of API resources), and
// records the generation it serves, so that the tombstones no replica
// needs any more are pruned.

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/idsauth/idsauth/issuer"
)

// tombstoneAge is how long a replica that says nothing of the generation
// it serves still holds back the pruning of tombstones: one that comes
// back later, older than the pruned ones, loads in full.
const tombstoneAge = time.Hour

// reconcile loads what the replica misses when the database's generation
// is not the one it serves (a notification lost), records the generation
// it serves, and prunes the tombstones every replica has passed.
func (r *Registry) reconcile(ctx context.Context, conn *pgx.Conn) error {
	var gen int64
	if err := r.call(ctx, func(ctx context.Context) error {
		return conn.QueryRow(ctx, `SELECT generation FROM idsauth_generation`).Scan(&gen)
	}); err != nil {
		return err
	}
	if gen != r.Status().Generation || !r.Status().Loaded {
		return r.load(ctx, conn)
	}
	r.served(ctx, conn, gen)
	return r.call(ctx, func(ctx context.Context) error {
		_, err := conn.Exec(ctx, `WITH horizon AS (
				SELECT min(generation) AS g FROM idsauth_replicas WHERE seen_at > now() - $1::interval
			), pruned AS (
				DELETE FROM idsauth_removed WHERE generation <= (SELECT g FROM horizon) RETURNING generation
			)
			UPDATE idsauth_generation SET pruned = (SELECT max(generation) FROM pruned) WHERE EXISTS (SELECT 1 FROM pruned) AND pruned < (SELECT max(generation) FROM pruned)`,
			tombstoneAge.String())
		if err == nil {
			_, err = conn.Exec(ctx, `DELETE FROM idsauth_replicas WHERE seen_at < now() - interval '1 day'`)
		}
		return err
	})
}

// served records the generation the replica serves, for the pruning of
// tombstones; a failure only delays it.
func (r *Registry) served(ctx context.Context, conn *pgx.Conn, gen int64) {
	err := r.call(ctx, func(ctx context.Context) error {
		_, err := conn.Exec(ctx, `INSERT INTO idsauth_replicas (replica, generation) VALUES ($1, $2)
			ON CONFLICT (replica) DO UPDATE SET generation = excluded.generation, seen_at = now()`, r.replica, gen)
		return err
	})
	if err == nil {
		r.up()
	}
}

// changes is what a load read: the generation it reached, and the rows
// (and tombstones) changed since the replica's, or every row.
type changes struct {
	gen         int64
	whole       bool
	clientRows  rowList  // enabled, changed
	apiRows     rowList  // enabled, changed
	off         []string // clients disabled or removed since
	apisChanged bool     // an API resource changed since: loaded whole
}

// load brings the issuer to the database's generation, from the one it
// serves: as a change when it can, whole otherwise.
func (r *Registry) load(ctx context.Context, conn *pgx.Conn) error {
	st := r.Status()
	var ch changes
	err := r.call(ctx, func(ctx context.Context) error {
		if st.Loaded {
			if done, err := ch.readChange(ctx, conn, st); done || err != nil {
				return err
			}
			ch = changes{}
		}
		return ch.readWhole(ctx, conn)
	})
	if err != nil {
		r.loads[1].Add(1)
		return err
	}
	clients, _, left := decodeList(clientKind, ch.clientRows)
	_, apis, badAPIs := decodeList(apiKind, ch.apiRows)
	// What was read is garbage from here on, but the IDs of a change:
	// the collector need not mark it while the issuer compiles.
	ch.clientRows.doc, ch.apiRows.doc = nil, nil
	if ch.whole {
		ch.clientRows.rows, ch.apiRows.rows = nil, nil
	}
	left = append(left, badAPIs...)
	clients, apis, admins := withoutAdmins(clients, apis)
	left = append(left, admins...)
	if ch.whole {
		left = append(left, unjoin(r.iss.SetRegistered(clients, apis))...)
	} else {
		left = append(left, unjoin(r.iss.UpdateRegistered(clients, ch.off))...)
	}
	r.loads[0].Add(1)
	r.loadedSnapshot(ch, left)
	r.served(ctx, conn, ch.gen)
	return nil
}

// The registrations changed since a generation ($1; -1: every enabled
// one), the oldest registration first: of two IDs equal under case
// folding, the issuer serves the first. And the tombstones since.
const (
	rowsSince       = `SELECT kind = 'api', id, config::text, secret_hashes, epoch, disabled FROM idsauth_registrations WHERE generation > $1 AND ($1 >= 0 OR NOT disabled) ORDER BY kind, created_at, id`
	tombstonesSince = `SELECT kind, id FROM idsauth_removed WHERE generation > $1`
)

// readWhole reads every enabled row, in a snapshot of its own, with room
// made first for as many clients, and their configurations, as the
// snapshot holds.
func (ch *changes) readWhole(ctx context.Context, conn *pgx.Conn) error {
	tx, err := conn.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return err
	}
	defer tx.Rollback(context.Background()) //nolint:errcheck // read only
	if err := checkSchema(ctx, tx); err != nil {
		return err
	}
	var n, size int
	if err := tx.QueryRow(ctx, `SELECT generation, count, size FROM idsauth_generation,
		(SELECT count(*), coalesce(sum(octet_length(config::text)), 0) AS size FROM idsauth_registrations WHERE kind = 'client' AND NOT disabled) AS c`).Scan(&ch.gen, &n, &size); err != nil {
		return err
	}
	ch.whole = true
	ch.clientRows.grow(clientKind, n, size)
	rows, err := tx.Query(ctx, rowsSince, -1)
	if err != nil {
		return err
	}
	return ch.scanRows(rows, -1, nil)
}

// readChange reads the rows changed since the generation st serves and
// the tombstones since, in one snapshot and one round trip (a change
// reaches every replica, and a request that meets its reading waits for
// the machine it shares). done is false when they make no change to
// apply (the tombstones were pruned past st's generation, an API resource
// changed, or a client was removed while another was left out, which it
// may have kept out by an ID equal under case folding): a whole read
// follows.
func (ch *changes) readChange(ctx context.Context, conn *pgx.Conn, st Status) (done bool, err error) {
	since := st.Generation
	var pruned int64
	seen := map[[2]string]bool{} // the kinds and IDs whose tombstones a row of theirs ends
	b := &pgx.Batch{}
	b.Queue(`BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY`)
	b.Queue(schemaVersion).QueryRow(func(row pgx.Row) error { return scanSchema(row) })
	b.Queue(`SELECT generation, pruned FROM idsauth_generation`).QueryRow(func(row pgx.Row) error {
		return row.Scan(&ch.gen, &pruned)
	})
	b.Queue(rowsSince, since).Query(func(rows pgx.Rows) error { return ch.scanRows(rows, since, seen) })
	b.Queue(tombstonesSince, since).Query(func(rows pgx.Rows) error { return ch.scanTombstones(rows, seen) })
	b.Queue(`COMMIT`)
	if err := conn.SendBatch(ctx, b).Close(); err != nil {
		// A statement that failed leaves its transaction open, aborted:
		// the listener ends the connection with it (listen returns).
		return false, err
	}
	return since >= pruned && since <= ch.gen && !ch.apisChanged && (len(ch.off) == 0 || st.Left == 0), nil
}

// scanRows reads rows of rowsSince since generation since (-1: every
// enabled one); seen, of a change, records the kind and ID of each.
func (ch *changes) scanRows(rows pgx.Rows, since int64, seen map[[2]string]bool) error {
	var api bool // kind "api"; else "client"
	var rw row
	var config pgtype.DriverBytes // pgx's own buffer, until the next row
	var epoch int64
	var disabled bool
	_, err := pgx.ForEachRow(rows, []any{&api, &rw.id, &config, &rw.hashes, &epoch, &disabled}, func() error {
		ch.apisChanged = ch.apisChanged || api
		if since >= 0 {
			seen[[2]string{kindOf(api).name, rw.id}] = true
		}
		switch {
		case disabled && !api:
			ch.off = append(ch.off, rw.id)
		case disabled:
		default:
			// A negative epoch, written by hand, reads as one beyond what
			// a JWT carries: the issuer leaves that row out, not the load.
			rw.epoch = uint64(epoch)
			if api {
				ch.apiRows.add(apiKind, rw, config)
			} else {
				ch.clientRows.add(clientKind, rw, config)
			}
		}
		rw = row{}
		return nil
	})
	ch.clientRows.close()
	ch.apiRows.close()
	return err
}

// scanTombstones reads rows of tombstonesSince: each ends its client's
// registration, or changes the API resources, unless a row of its kind
// and ID since (seen) registered it again.
func (ch *changes) scanTombstones(rows pgx.Rows, seen map[[2]string]bool) error {
	var kindName, id string
	_, err := pgx.ForEachRow(rows, []any{&kindName, &id}, func() error {
		if seen[[2]string{kindName, id}] {
			return nil
		}
		if kindName == apiKind.name {
			ch.apisChanged = true
		} else {
			ch.off = append(ch.off, id)
		}
		return nil
	})
	return err
}

// unjoin returns the errors err joins, or err alone.
func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	if err != nil {
		return []error{err}
	}
	return nil
}

// loadedSnapshot records a load, and logs each registration it left out
// (each an *issuer.RegistrationError) that was not left out before:
// before the load shows in Status and WaitLoaded, so that whoever sees it
// loaded finds them in the log. It runs on the listener's goroutine
// alone.
func (r *Registry) loadedSnapshot(ch changes, left []error) {
	r.mu.Lock()
	was := r.left
	r.mu.Unlock()
	now := map[string]string{}
	if !ch.whole { // a change: what it touched decides anew, the rest stays
		for k, v := range was {
			now[k] = v
		}
		for _, rw := range ch.clientRows.rows {
			delete(now, clientKind.name+"\x00"+rw.id)
		}
		for _, rw := range ch.apiRows.rows {
			delete(now, apiKind.name+"\x00"+rw.id)
		}
		for _, id := range ch.off {
			delete(now, clientKind.name+"\x00"+id)
		}
	}
	for _, err := range left {
		key := "\x00"
		var re *issuer.RegistrationError
		if errors.As(err, &re) {
			key = kindOf(re.API).name + "\x00" + re.ID
		}
		now[key] = err.Error()
	}
	var lines []string
	for k, text := range now {
		if was[k] != text {
			lines = append(lines, text)
		}
	}
	slices.Sort(lines)
	for _, l := range lines {
		r.logger.Warn("idsauth registry: a registration is left out: it does not fit the issuer's configuration", slog.String("error", l))
	}
	clients, apis, _ := r.iss.Registered()
	r.mu.Lock()
	first := !r.status.Loaded
	r.left = now
	r.status.Loaded, r.status.Generation, r.status.LoadedAt = true, ch.gen, time.Now()
	if !ch.whole {
		r.status.Changes++
	}
	r.status.Left = len(now)
	r.status.Clients, r.status.APIResources = clients, apis
	close(r.next)
	r.next = make(chan struct{})
	r.mu.Unlock()
	r.up()
	if first {
		close(r.loaded)
	}
}
