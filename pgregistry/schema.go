package pgregistry

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// migrations are the schema's versions, in order: migration i makes
// version i+1. A released one never changes; a new version is a new
// entry, and adds what it needs without breaking the version before it,
// so that replicas not yet upgraded keep working on the migrated schema.
var migrations = []string{
	// 1: registrations, the generation every change bumps, the audit trail.
	`CREATE TABLE idsauth_registrations (
		kind          text        NOT NULL CHECK (kind IN ('client', 'api')),
		id            text        NOT NULL CHECK (id <> ''),
		config        json        NOT NULL,
		secret_hashes text[]      NOT NULL DEFAULT '{}',
		disabled      boolean     NOT NULL DEFAULT false,
		created_at    timestamptz NOT NULL DEFAULT now(),
		updated_at    timestamptz NOT NULL DEFAULT now(),
		PRIMARY KEY (kind, id)
	);
	COMMENT ON TABLE idsauth_registrations IS 'idsauth''s registered clients (kind client) and API resources (kind api); config is the configuration file''s JSON of one, without its ID and secret hashes';
	CREATE TABLE idsauth_generation (
		one        boolean PRIMARY KEY DEFAULT true CHECK (one),
		generation bigint  NOT NULL
	);
	INSERT INTO idsauth_generation VALUES (true, 0);
	CREATE TABLE idsauth_audit (
		id      bigserial   PRIMARY KEY,
		at      timestamptz NOT NULL DEFAULT now(),
		actor   text        NOT NULL,
		address text        NOT NULL,
		action  text        NOT NULL,
		kind    text        NOT NULL,
		target  text        NOT NULL,
		detail  json
	);
	CREATE INDEX idsauth_audit_target ON idsauth_audit (kind, target, at);
	COMMENT ON TABLE idsauth_audit IS 'every change made through idsauth''s admin API: who (the admin token''s client_id), from where, what, when; never a secret';`,
	// 2: each registration's epoch (issuer.ClientConfig.Epoch), which its
	// tokens carry: a new one when it is inserted, renamed (by hand),
	// enabled again, or left with none of its secrets, set by a trigger, so that every writer
	// (a replica of release 1 during a rolling upgrade, SQL by hand) keeps
	// the rule. The rows of before keep 0, the epoch of the tokens issued
	// before: the upgrade ends none.
	`CREATE SEQUENCE idsauth_epoch;
	ALTER TABLE idsauth_registrations ADD COLUMN epoch bigint NOT NULL DEFAULT 0;
	CREATE FUNCTION idsauth_registration_epoch() RETURNS trigger LANGUAGE plpgsql AS $$
	BEGIN
		IF TG_OP = 'INSERT'
			OR OLD.kind <> NEW.kind OR OLD.id <> NEW.id
			OR (OLD.disabled AND NOT NEW.disabled)
			OR (cardinality(OLD.secret_hashes) > 0 AND NOT (OLD.secret_hashes && NEW.secret_hashes)) THEN
			NEW.epoch := nextval('idsauth_epoch');
		ELSE
			NEW.epoch := OLD.epoch;
		END IF;
		RETURN NEW;
	END $$;
	CREATE TRIGGER idsauth_registration_epoch BEFORE INSERT OR UPDATE ON idsauth_registrations
		FOR EACH ROW EXECUTE FUNCTION idsauth_registration_epoch();
	COMMENT ON COLUMN idsauth_registrations.epoch IS 'the registration''s epoch, which its tokens carry: renewed by the trigger idsauth_registration_epoch when the row is inserted, renamed, enabled again or left with none of its secrets; 0 for a row of before';`,
	// 3: each change is applied as a change. A registration keeps the
	// generation of its last change, a removed one a tombstone of its
	// own; every replica records the generation it serves, so that the
	// tombstones no replica needs any more are pruned (up to pruned: a
	// replica older than that loads in full). Triggers keep the rule,
	// whoever writes: taking the generation's row first, so that two
	// changes at once each get their own.
	`ALTER TABLE idsauth_registrations ADD COLUMN generation bigint NOT NULL DEFAULT 0;
	CREATE INDEX idsauth_registrations_generation ON idsauth_registrations (generation);
	CREATE TABLE idsauth_removed (
		kind       text   NOT NULL,
		id         text   NOT NULL,
		generation bigint NOT NULL,
		PRIMARY KEY (kind, id)
	);
	CREATE INDEX idsauth_removed_generation ON idsauth_removed (generation);
	CREATE TABLE idsauth_replicas (
		replica    text        PRIMARY KEY,
		generation bigint      NOT NULL,
		seen_at    timestamptz NOT NULL DEFAULT now()
	);
	ALTER TABLE idsauth_generation ADD COLUMN pruned bigint NOT NULL DEFAULT 0;
	CREATE FUNCTION idsauth_registration_change() RETURNS trigger LANGUAGE plpgsql AS $$
	DECLARE
		g bigint;
	BEGIN
		SELECT generation + 1 INTO g FROM idsauth_generation FOR UPDATE;
		IF TG_OP = 'DELETE' OR (TG_OP = 'UPDATE' AND (OLD.kind <> NEW.kind OR OLD.id <> NEW.id)) THEN
			INSERT INTO idsauth_removed (kind, id, generation) VALUES (OLD.kind, OLD.id, g)
				ON CONFLICT (kind, id) DO UPDATE SET generation = excluded.generation;
		END IF;
		IF TG_OP = 'DELETE' THEN
			RETURN OLD;
		END IF;
		NEW.generation := g;
		RETURN NEW;
	END $$;
	CREATE TRIGGER idsauth_registration_change BEFORE INSERT OR UPDATE OR DELETE ON idsauth_registrations
		FOR EACH ROW EXECUTE FUNCTION idsauth_registration_change();
	COMMENT ON TABLE idsauth_removed IS 'a tombstone of each registration removed (or renamed), with the generation of its removal, kept until every replica has passed it';
	COMMENT ON TABLE idsauth_replicas IS 'the generation each replica serves, and when it said so: the tombstones older than every live replica''s are pruned';`,
}

// SchemaVersion is the version of the schema this package writes: Migrate
// brings a database to it.
const SchemaVersion = 3

// lockKey is the advisory lock that serializes migrations: two replicas
// migrating at once run one after the other.
const lockKey = 0x1d5a_0001

// ErrSchema is the error of a database whose schema is not the one this
// package reads: not migrated yet (run idsauth migrate), or migrated by a
// newer release.
var ErrSchema = errors.New("pgregistry: the database's schema is not this release's")

// Migrate brings the database at url to SchemaVersion, applying in one
// transaction the migrations it has not had, and returns the versions
// before and after. It is idempotent: run on a migrated database it
// changes nothing. A database migrated by a newer release is left alone
// and is an error (ErrSchema). Errors never hold the URL's password.
func Migrate(ctx context.Context, url string) (from, to int, err error) {
	cfg, err := parseURL(url)
	if err != nil {
		return 0, 0, err
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return 0, 0, scrub(err, cfg.Password)
	}
	defer conn.Close(context.Background())
	from, err = migrate(ctx, conn)
	return from, SchemaVersion, scrub(err, cfg.Password)
}

func migrate(ctx context.Context, conn *pgx.Conn) (int, error) {
	tx, err := conn.Begin(ctx)
	if err != nil {
		return 0, err
	}
	defer tx.Rollback(context.Background()) //nolint:errcheck // after Commit, nothing
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, lockKey); err != nil {
		return 0, err
	}
	if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS idsauth_schema (
		version    integer     PRIMARY KEY,
		applied_at timestamptz NOT NULL DEFAULT now()
	)`); err != nil {
		return 0, err
	}
	var from int
	if err := tx.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM idsauth_schema`).Scan(&from); err != nil {
		return 0, err
	}
	if from > SchemaVersion {
		return from, fmt.Errorf("%w: version %d, newer than this release's %d: upgrade idsauth", ErrSchema, from, SchemaVersion)
	}
	for v := from + 1; v <= SchemaVersion; v++ {
		if _, err := tx.Exec(ctx, migrations[v-1]); err != nil {
			return from, fmt.Errorf("migration to version %d: %w", v, err)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO idsauth_schema (version) VALUES ($1)`, v); err != nil {
			return from, err
		}
	}
	return from, tx.Commit(ctx)
}

// checkSchema returns nil when the database holds this release's schema.
func checkSchema(ctx context.Context, q interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}) error {
	return scanSchema(q.QueryRow(ctx, schemaVersion))
}

// schemaVersion is the query of the schema's version.
const schemaVersion = `SELECT coalesce(max(version), 0) FROM idsauth_schema`

// scanSchema reads row, of schemaVersion, as checkSchema does.
func scanSchema(row pgx.Row) error {
	var v int
	err := row.Scan(&v)
	if err != nil {
		if isUndefinedTable(err) {
			return fmt.Errorf("%w: not migrated: run idsauth migrate", ErrSchema)
		}
		return err
	}
	if v < SchemaVersion {
		return fmt.Errorf("%w: version %d, older than this release's %d: run idsauth migrate", ErrSchema, v, SchemaVersion)
	}
	return nil
}
