package pgstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Check verifies that the host table and every configured column exist, that a struct row's
// fields can hold their columns (judged on one row of the table, if it has one), and that the
// reconciler's tables (Tables) exist with every migration of this package applied, and
// prepares the store's statements. Tables missing or behind fail with a *MigrationError
// (errors.Is ErrNotMigrated) saying to run Migrate. Read calls it on first use; call it at
// startup to fail early.
func (s *Store[L]) Check(ctx context.Context) error {
	_, err := s.statements(ctx)
	return err
}

func (s *Store[L]) statements(ctx context.Context) (*statements, error) { return s.prepare(ctx, true) }

// prepare returns the store's statements, built from the catalog on first use; with migrated,
// once it has also found the reconciler's tables migrated (checkMigrated). ReadFrom asks
// without: it reads the host table alone, which a SELECT-only role on a database without the
// reconciler's tables can.
func (s *Store[L]) prepare(ctx context.Context, migrated bool) (*statements, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sql != nil && (s.migrated || !migrated) {
		return s.sql, nil
	}
	if s.sql == nil {
		st, err := s.buildStatements(ctx)
		if err != nil {
			return nil, err
		}
		s.sql = st
	}
	if migrated {
		if err := checkMigrated(ctx, s.db, s.cfg.Tables); err != nil {
			return nil, err
		}
		s.migrated = true
	}
	return s.sql, nil
}

// buildStatements reads the host table's catalog, checks the configuration against it and
// builds the statements.
func (s *Store[L]) buildStatements(ctx context.Context) (*statements, error) {
	types, err := s.columnTypes(ctx)
	if err != nil {
		return nil, err
	}
	if err := s.cfg.checkFilter(types); err != nil {
		return nil, err
	}
	collations, err := s.keyCollations(ctx)
	if err != nil {
		return nil, err
	}
	st := buildStatements(s.cfg, types, collations, s.row)
	// A value the column cannot take (text for a bigint, say) fails here rather than in the
	// first batch.
	if where, args := renderFilter(s.cfg, types, 1); where != "" {
		rows, err := s.db.Query(ctx, "SELECT 1 FROM "+s.hostTable()+" AS h WHERE "+where+" LIMIT 0", args...)
		if err == nil {
			rows.Close()
			err = rows.Err()
		}
		if err != nil {
			return nil, fmt.Errorf("pgstore: config: Filter on %s: %w", s.hostTable(), err)
		}
	}
	if err := s.row.checkSample(ctx, s.db, st.parts); err != nil {
		return nil, err
	}
	return st, nil
}

// keyCollations reads from the catalog the collation of each key column that has one other
// than the database's: COLLATE and its name, "" for the others. The sweep reads in the
// columns' order; where two keys taken from JSON are compared (the lag marks' ranges), the
// comparison must name it.
func (s *Store[L]) keyCollations(ctx context.Context) ([]string, error) {
	out := make([]string, len(s.cfg.KeyColumns))
	for i, k := range s.cfg.KeyColumns {
		err := s.db.QueryRow(ctx, `
			SELECT coalesce((SELECT ' COLLATE ' || quote_ident(n.nspname) || '.' || quote_ident(c.collname)
				FROM pg_collation c JOIN pg_namespace n ON n.oid = c.collnamespace
				WHERE c.oid = a.attcollation AND c.collname <> 'default'), '')
			FROM pg_attribute a WHERE a.attrelid = to_regclass($1) AND a.attname = $2 AND NOT a.attisdropped`, s.hostTable(), k).Scan(&out[i])
		if err != nil {
			return nil, fmt.Errorf("pgstore: read catalog for %s: collation of %q: %w", s.hostTable(), k, err)
		}
	}
	return out, nil
}

// isView reports whether the host table is a view or a materialized view; false when the
// catalog cannot say.
func (s *Store[L]) isView(ctx context.Context) bool {
	var view bool
	err := s.db.QueryRow(ctx, `SELECT coalesce((SELECT relkind IN ('v', 'm') FROM pg_class WHERE oid = to_regclass($1)), false)`,
		s.hostTable()).Scan(&view)
	return err == nil && view
}

// columnTypes reads the host table's column types from the catalog.
func (s *Store[L]) columnTypes(ctx context.Context) (map[string]string, error) {
	rows, err := s.db.Query(ctx, `
		SELECT a.attname, CASE WHEN a.atttypid = 'bit'::regtype THEN format_type(a.atttypid, a.atttypmod)
			ELSE format_type(a.atttypid, NULL) END, a.attnotnull
		FROM pg_attribute a
		WHERE a.attrelid = to_regclass($1) AND a.attnum > 0 AND NOT a.attisdropped`, s.hostTable())
	if err != nil {
		return nil, fmt.Errorf("pgstore: read catalog for %s: %w", s.hostTable(), err)
	}
	types := map[string]string{}
	notNull := map[string]bool{}
	var name, typ string
	var nn bool
	if _, err := pgx.ForEachRow(rows, []any{&name, &typ, &nn}, func() error {
		// format_type without the modifier says "character" and "bit", which as casts mean
		// char(1) and bit(1) and would cut every value to its first character (a key read back
		// from a cursor position would stop the sweep); bpchar keeps it whole, and bit keeps
		// its length (bit(4)), which a cast to varbit would too, but the column's index would
		// no longer serve.
		if typ == "character" {
			typ = "bpchar"
		}
		types[name], notNull[name] = typ, nn
		return nil
	}); err != nil {
		return nil, fmt.Errorf("pgstore: read catalog for %s: %w", s.hostTable(), err)
	}
	if len(types) == 0 {
		return nil, fmt.Errorf("pgstore: table %s does not exist (or has no columns) in the search_path", s.hostTable())
	}
	for _, c := range s.cfg.hostColumns(s.row.text) {
		if _, ok := types[c.name]; !ok {
			return nil, fmt.Errorf("pgstore: table %s has no column %q: set Config.%s to %s", s.hostTable(), c.name, c.field, c.use)
		}
	}
	for _, f := range s.row.fields {
		if _, ok := types[f.column]; !ok {
			return nil, fmt.Errorf("pgstore: struct field %s (column %s): table %s has no such column", f.name, f.column, s.hostTable())
		}
	}
	// A keyset skips rows whose key is NULL and rows whose key ties across a batch boundary;
	// findings and observations are per row id, so two rows sharing one would be confused.
	for _, k := range append([]string{s.cfg.IDColumn}, s.cfg.KeyColumns...) {
		if !notNull[k] {
			if s.isView(ctx) {
				// Its owner cannot make a view's column NOT NULL, nor give it a unique index.
				return nil, fmt.Errorf("pgstore: %s is a view: to the catalog a view's columns may be null and its key is not unique, so a keyset cannot trust it; read the table it selects from", s.hostTable())
			}
			return nil, fmt.Errorf("pgstore: column %q of %s is nullable; as a key or row id it must be NOT NULL", k, s.hostTable())
		}
	}
	for _, k := range s.cfg.KeyColumns {
		if types[k] == "real" || types[k] == "double precision" {
			return nil, fmt.Errorf("pgstore: key column %q of %s is a floating-point %s; use an exact type", k, s.hostTable(), types[k])
		}
	}
	if err := s.checkKeyTypes(ctx, types); err != nil {
		return nil, err
	}
	for _, c := range s.cfg.timeColumns() {
		if types[c.name] != naiveTimestamp && types[c.name] != "timestamp with time zone" {
			return nil, fmt.Errorf("pgstore: column %q of %s is %s, not a timestamp: set Config.%s to %s", c.name, s.hostTable(), types[c.name], c.field, c.use)
		}
	}
	if err := s.checkUnique(ctx, s.cfg.KeyColumns, "key columns"); err != nil {
		return nil, err
	}
	if err := s.checkUnique(ctx, []string{s.cfg.IDColumn}, "IDColumn"); err != nil {
		return nil, err
	}
	if _, err := s.db.Exec(ctx, "SELECT now() AT TIME ZONE $1::text", s.cfg.TimeZone); err != nil {
		return nil, fmt.Errorf("pgstore: config: TimeZone %q: %w", s.cfg.TimeZone, err)
	}
	return types, nil
}

// hostColumn is a host column the store reads, the Config field that names it and what the
// store reads it for: an error about the column says all three, so that a host whose table
// names it otherwise knows which field to set, and to what.
type hostColumn struct {
	name, field, use string
}

// timeColumns are the two timestamps the store reads of every row.
func (cfg *Config) timeColumns() []hostColumn {
	return []hostColumn{
		{cfg.UpdatedAtColumn, "UpdatedAtColumn", "the timestamp of a row's last change (rows changed within the grace period are in flight, not asked about)"},
		{cfg.CreatedAtColumn, "CreatedAtColumn", "the timestamp of a row's creation (a never-verified row's lag counts from it; the bulk fetch lists the external objects created around it)"},
	}
}

// hostColumns lists the host columns the store reads; the state column only for a store of
// its text (state).
func (cfg *Config) hostColumns(state bool) []hostColumn {
	cols := append(cfg.timeColumns(), hostColumn{cfg.ExternalIDColumn, "ExternalIDColumn", "the column holding the external object's id"})
	for i, k := range cfg.KeyColumns {
		cols = append(cols, hostColumn{k, fmt.Sprintf("KeyColumns[%d]", i), "the columns the sweep walks the table by, unique together (the keyset)"})
	}
	cols = append(cols, hostColumn{cfg.IDColumn, "IDColumn", "the column that identifies a row in findings and repair commands"})
	if state {
		cols = append(cols, hostColumn{cfg.StateColumn, "StateColumn", "the column holding the row's local state (or read a struct of columns with NewOf)"})
	}
	if cfg.Observations == ObserveInHostColumns {
		cols = append(cols,
			hostColumn{cfg.ObservedColumn, "ObservedColumn", "the column ObserveInHostColumns writes the observed external state to"},
			hostColumn{cfg.VerifiedAtColumn, "VerifiedAtColumn", "the column ObserveInHostColumns writes the last-verified time to"})
	}
	for i, c := range cfg.SearchColumns {
		cols = append(cols, hostColumn{c, fmt.Sprintf("SearchColumns[%d]", i), "a column of the table that FindingQuery.Search matches"})
	}
	return cols
}

// checkUnique verifies that some unique index (or the primary key) covers only columns among
// cols, so that cols identify a row.
func (s *Store[L]) checkUnique(ctx context.Context, cols []string, what string) error {
	var unique bool
	if err := s.db.QueryRow(ctx, `
		SELECT EXISTS (
			SELECT 1 FROM pg_index i
			WHERE i.indrelid = to_regclass($1) AND i.indisunique AND i.indpred IS NULL AND i.indexprs IS NULL
			AND (SELECT bool_and(a.attname = ANY($2)) FROM pg_attribute a
				WHERE a.attrelid = i.indrelid AND a.attnum = ANY((i.indkey::int2[])[0:i.indnkeyatts - 1])))`,
		s.hostTable(), cols).Scan(&unique); err != nil {
		return fmt.Errorf("pgstore: read catalog for %s: %w", s.hostTable(), err)
	}
	if !unique {
		return fmt.Errorf("pgstore: %s %v of %s are not unique (no unique index or primary key within them); rows sharing a value would be skipped or confused", what, cols, s.hostTable())
	}
	return nil
}

// keyTypeRefusals says why a key column of each kind of type (keyTypes' answer) cannot be a
// keyset key: positions are JSON arrays of the key values, which the reads take back as each
// column's type from their text (->>).
var keyTypeRefusals = map[string]string{
	"array":     "an array, which a cursor position cannot hold as one value",
	"composite": "a composite (row) type, which a cursor position cannot hold as one value",
	"json":      "JSON, which a cursor position (itself JSON) does not give back as the same value",
	"jsoncast":  "a type written as JSON by its cast to json, which a cursor position does not give back as the same value",
	"interval":  "an interval, whose text depends on the session's IntervalStyle: a cursor position written by one session would be another key to another",
	"money":     "money, whose text depends on the session's lc_monetary: a cursor position written by one session would be another key to another",
	"reg":       "an object reference (reg*), whose text depends on the session's search_path: a cursor position written by one session would be another key to another",
	"range":     "a range of dates or times, whose text depends on the session's DateStyle and IntervalStyle: a cursor position written by one session would be another key to another",
	"unordered": "which has no ordering (no default btree operator class) to walk it by",
}

// keyTypes finds, for each key column whose type (or a domain's base type) a keyset cannot
// walk, why: the kind of keyTypeRefusals. Ranges are judged by their element type, whose text
// their own is made of. pg_range's multirange column is read through to_jsonb, which a server
// older than multiranges (14) answers with NULL rather than an error. It is a plain SELECT (its
// WITH inside), as every statement of a read-only audit is.
const keyTypes = `
	SELECT col, kind FROM (
		WITH RECURSIVE t(col, typ, element) AS (
			SELECT a.attname, a.atttypid, false FROM pg_attribute a
			WHERE a.attrelid = to_regclass($1) AND a.attname = ANY($2) AND a.attnum > 0 AND NOT a.attisdropped
			UNION
			SELECT t.col, coalesce(nullif(y.typbasetype, 0), r.rngsubtype), t.element OR y.typtype <> 'd'
			FROM t JOIN pg_type y ON y.oid = t.typ
			LEFT JOIN pg_range r ON t.typ IN (r.rngtypid, (to_jsonb(r) ->> 'rngmultitypid')::oid)
			WHERE y.typtype = 'd' OR r.rngsubtype IS NOT NULL
		)
		SELECT t.col, CASE
			WHEN t.element THEN
				CASE WHEN y.oid IN ('date'::regtype, 'timestamp'::regtype, 'timestamptz'::regtype, 'interval'::regtype) THEN 'range' END
			WHEN y.typcategory = 'A' THEN 'array'
			WHEN y.typtype = 'c' OR y.oid = 'record'::regtype THEN 'composite'
			WHEN y.oid IN ('json'::regtype, 'jsonb'::regtype) THEN 'json'
			WHEN y.oid = 'interval'::regtype THEN 'interval'
			WHEN y.oid = 'money'::regtype THEN 'money'
			WHEN y.typnamespace = 'pg_catalog'::regnamespace AND y.typname IN ('regclass', 'regcollation', 'regconfig', 'regdictionary',
				'regnamespace', 'regoper', 'regoperator', 'regproc', 'regprocedure', 'regrole', 'regtype') THEN 'reg'
			-- to_jsonb writes a type of an extension (hstore) through its cast to json.
			WHEN y.oid >= 16384 AND EXISTS (SELECT 1 FROM pg_cast c
				WHERE c.castsource = y.oid AND c.casttarget IN ('json'::regtype, 'jsonb'::regtype)) THEN 'jsoncast'
		END AS kind
		FROM t JOIN pg_type y ON y.oid = t.typ
		WHERE y.typtype <> 'd'
	) k WHERE kind IS NOT NULL
	ORDER BY array_position($2, col)
	LIMIT 1`

// checkKeyTypes refuses a key column the keyset cannot walk: one whose value a cursor position
// cannot carry back as the same key (keyTypes), or that has no order (the first read would
// fail, or the sweep skip or repeat rows, or never end).
func (s *Store[L]) checkKeyTypes(ctx context.Context, types map[string]string) error {
	refuse := func(col, kind string) error {
		return fmt.Errorf("pgstore: key column %q of %s is %s, %s; use a key column of a type the keyset can walk "+
			"(an integer, text, varchar, char, uuid, numeric, a date or timestamp, an enum), or a pair such as (created_at, id)",
			col, s.hostTable(), types[col], keyTypeRefusals[kind])
	}
	var col, kind string
	err := s.db.QueryRow(ctx, keyTypes, s.hostTable(), s.cfg.KeyColumns).Scan(&col, &kind)
	if err == nil {
		return refuse(col, kind)
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("pgstore: read catalog for %s: key column types: %w", s.hostTable(), err)
	}
	// Whether a type has an order is the planner's to say (a default btree operator class of
	// the type, or of one it is binary-coercible to, such as varchar's text): it is asked.
	for _, k := range s.cfg.KeyColumns {
		rows, err := s.db.Query(ctx, "SELECT 1 FROM "+s.hostTable()+" AS h ORDER BY h."+pgx.Identifier{k}.Sanitize()+" LIMIT 0")
		if err == nil {
			rows.Close()
			err = rows.Err()
		}
		if pe := (*pgconn.PgError)(nil); errors.As(err, &pe) && pe.Code == "42883" { // undefined_function: no ordering operator
			return refuse(k, "unordered")
		}
		if err != nil {
			return fmt.Errorf("pgstore: read catalog for %s: order of key column %q: %w", s.hostTable(), k, err)
		}
	}
	return nil
}
