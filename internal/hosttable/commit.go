package hosttable

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/reconcilekit/reconcile"
)

// setTimeZone sets the transaction's TimeZone to $1, until it ends, and turns explicit sorts
// (and JIT compilation) off for the planning of the statements that follow, until
// restoreSorts: their lookups of a record's open findings (LockFindings, the findings
// statement's open_now), which must return them in the order they are locked, are then planned
// on the findings_open index, which gives that order, rather than on whichever partial index of
// the findings table is smallest: until the table is first vacuumed or analyzed (it is created
// empty) the planner believes every one of them empty, and a plan made then scanned every open
// finding of the job for each record, a cost that grew with the findings (a batch of 1,000
// rows took 0.2 s where it takes 10 ms). Incremental sorts are turned off too: the findings
// statement reads a range of a job's open findings in findings_open's order, which an analyzed
// table would otherwise have read from the index on record_id alone, every job's findings and
// the resolved ones included, sorting each record's by kind. A sort that cannot be avoided is
// still made: it then costs the planner enough to compile the statement, hence JIT off.
const setTimeZone = `SELECT set_config('reconcile.TimeZone', current_setting('TimeZone'), true), set_config('TimeZone', $1, true),
	set_config('reconcile.enable_sort', current_setting('enable_sort'), true), set_config('enable_sort', 'off', true),
	set_config('reconcile.enable_incremental_sort', current_setting('enable_incremental_sort'), true),
	set_config('enable_incremental_sort', 'off', true),
	set_config('reconcile.jit', current_setting('jit'), true), set_config('jit', 'off', true)`

// restoreTimeZone gives TimeZone back the value setTimeZone found: in a transaction of the
// host's (a DB that is a pgx.Tx), whose savepoint keeps what the commit set for the rest of it.
const restoreTimeZone = `SELECT set_config('TimeZone', current_setting('reconcile.TimeZone'), true)`

// restoreSorts gives enable_sort, enable_incremental_sort and jit back the values setTimeZone
// found.
const restoreSorts = `SELECT set_config('enable_sort', current_setting('reconcile.enable_sort'), true),
	set_config('enable_incremental_sort', current_setting('reconcile.enable_incremental_sort'), true),
	set_config('jit', current_setting('reconcile.jit'), true)`

// joinByHash turns nested loops off and hash joins on for the planning of ObserveInRange, until
// restoreJoins: its lookup of the batch's rows in the scan of the batch's range is then by hash,
// one pass over each, whatever the statistics. A nested loop over the two, which the planner
// may think as cheap when it believes the range or the batch (an array parameter) small, would
// compare every row of one with every row of the other; so would it if the host turned hash
// joins off (on its role, say) and the range is not in the id's order, as a merge join needs.
const joinByHash = `SELECT set_config('reconcile.enable_nestloop', current_setting('enable_nestloop'), true),
	set_config('reconcile.enable_hashjoin', current_setting('enable_hashjoin'), true),
	set_config('enable_nestloop', 'off', true), set_config('enable_hashjoin', 'on', true)`

// setTimeZoneJoinByHash is setTimeZone and joinByHash in one statement, for a commit whose
// statements before ObserveInRange (the locks) are planned alike either way: a lateral lookup
// has no join but a nested loop.
var setTimeZoneJoinByHash = setTimeZone + ",\n\t" + strings.TrimPrefix(joinByHash, "SELECT ")

// restoreJoins gives enable_nestloop and enable_hashjoin back the values joinByHash found.
const restoreJoins = `SELECT set_config('enable_nestloop', current_setting('reconcile.enable_nestloop'), true),
	set_config('enable_hashjoin', current_setting('reconcile.enable_hashjoin'), true)`

// KeyRange is the keyset range a sweep's batch was read from: after the key After (empty: from
// the start) up to the key UpTo, inclusive, JSON arrays as the cursor holds them. The zero
// KeyRange says that it is not known (a lane's commit, say).
type KeyRange struct{ After, UpTo string }

// ForgetNote is the note on findings closed because their row was deleted.
const ForgetNote = "the row no longer exists; closed when the cycle completed"

// Queued is what QueueResults queued: the findings statement's answer, read once the batch is.
type Queued struct {
	hand Handover
	raw  []byte // the handed-over commands, a JSON array of {id, name, payload}
	// unobserved, when not nil, asks which rows the observations statement left unobserved
	// (it wrote fewer than it was given) and notes them: run once the batch is read.
	unobserved func(ctx context.Context, tx pgx.Tx) error
}

// QueueResults queues the observations, findings and repair commands of outcomes and the
// closing of the findings verified judgments no longer describe, each for the rows as they
// were read (see reconcile.Sink); res receives what the findings statement added, and changed
// (if not nil) the ids of the rows changed since their read. read, if known, is the keyset
// range the outcomes' rows were read from. The commands it queued are handed over by
// SendFenced (or SendFencedIn) with the Queued it returns.
func (t *Table[L]) QueueResults(ctx context.Context, batch *pgx.Batch, job string, outcomes []reconcile.Outcome, read KeyRange,
	res *reconcile.CommitResult, changed *[]string) (*Queued, error) {
	st, err := t.Spec(ctx)
	if err != nil {
		return nil, err
	}
	// In record order, whoever commits: a sweep and a lane writing the same rows at once then
	// lock them in the same order and cannot deadlock. (An order of indexes: the outcomes are
	// large to copy.)
	order := make([]int, len(outcomes))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return strings.Compare(outcomes[a].RecordID, outcomes[b].RecordID) })
	var nVerified, nFindings int
	twice := false // a record verified twice (in record order, its outcomes are adjacent)
	unversioned := false
	last := -1
	for _, i := range order {
		if o := &outcomes[i]; o.Verified {
			nVerified++
			twice = twice || last >= 0 && outcomes[last].RecordID == o.RecordID
			unversioned = unversioned || o.Version == ""
			last = i
		}
		if hasFinding(&outcomes[i]) {
			nFindings++
		}
	}
	// A sweep's commit checks its rows as read in the range it read them from.
	inRange := st.ObserveTakesJob && read.UpTo != "" && st.ObserveInRange[0] != ""
	// The observations statement below that checks them so (planned by joinByHash).
	rangeObserve := inRange && nVerified > 0 && !twice && pipelinedBegin(t.db)
	// The commit runs in the configured zone, so that an updated_at trigger on the host table
	// writing now() into a timestamp without time zone column writes it in that zone, not in
	// the session's.
	if rangeObserve {
		batch.Queue(setTimeZoneJoinByHash, st.TimeZone)
	} else {
		batch.Queue(setTimeZone, st.TimeZone)
	}
	// Where the observations statement runs earlier in the commit's own transaction, the
	// findings statement judges the verified outcomes by the observations it wrote
	// (FindingsObserved), not by looking at their rows and verifications again. Not where
	// that decision is not the findings statement's: a record verified twice has one
	// observation for both judgments, and a row of no version (only a host's own outcomes
	// have none) moved out of the range by a change of its key is not observed in the range,
	// though it still exists.
	observed := st.ObserveTakesJob && pipelinedBegin(t.db) && !twice && !(inRange && unversioned)
	// The arrays bound are texts and times (arrays.go): pgx encodes them without an
	// allocation an element.
	obsIDs, obsStates, obsVersions := make(texts, 0, nVerified), make(texts, 0, nVerified), make(texts, 0, nVerified)
	obsTimes := make(times, 0, nVerified) // when each answer was obtained; NULL: the commit's time
	f := newFindingCols(nFindings)
	// clear are the verified judgments that carry no finding but decide their records'
	// findings: the findings statement closes those records' open findings, if any.
	clear := newClearCols(nVerified, observed)
	// withFindings are the rows whose outcomes open findings; judged, those whose outcomes
	// write anything.
	withFindings, judged := make(texts, 0, nFindings), make(texts, 0, nVerified+nFindings)
	for _, i := range order {
		o := &outcomes[i]
		finding := hasFinding(o)
		if o.Verified {
			obsIDs, obsStates, obsVersions = append(obsIDs, o.RecordID), append(obsStates, o.External), append(obsVersions, o.Version)
			obsTimes = append(obsTimes, VerifiedAt(o))
		}
		switch {
		case finding:
			f.add(job, o, o.Decision.Kind)
		case o.Decides():
			clear.add(o)
		}
		if !o.NotARow && finding {
			withFindings = append(withFindings, o.RecordID)
		}
		if !o.NotARow && (finding || o.Verified) {
			judged = append(judged, o.RecordID)
		}
	}
	// The rows changed since their read, each once: the observations statement reports the
	// verified ones it left unobserved, the findings statement the others it checked.
	var seen map[string]bool
	noteChanged := func(ids []string) {
		for _, id := range ids {
			if seen == nil {
				seen = map[string]bool{}
			}
			if !seen[id] {
				seen[id] = true
				if res.Changed++; changed != nil {
					*changed = append(*changed, id)
				}
			}
		}
	}
	readChanged := func(row pgx.Row) error {
		var ids []string
		err := row.Scan(&ids)
		noteChanged(ids)
		return err
	}
	// Locks, each set in one order and the sets in the canonical writer's order, so that no
	// one waits on another in a circle: the records that may get findings, the host rows (with
	// observations in host columns), the open findings of the records that may get findings.
	// (The findings statement takes the other findings it closes only if no one holds them.)
	if len(withFindings) > 0 {
		batch.Queue(st.LockRecords, job, st.FindingsTable, withFindings)
	}
	if st.LockObserved != "" && len(judged) > 0 {
		batch.Queue(st.LockObserved, judged)
	}
	if len(withFindings) > 0 {
		batch.Queue(st.LockFindings, job, withFindings)
	}
	// In the reconciler's own table the observations are written first: a commit that
	// observes a row waits there for another one that observed it (ON CONFLICT waits for it),
	// so that the findings statement, which leaves alone a row verified since on a newer
	// answer, sees that one's verification. With ObserveInHostColumns, lockObserved serializes
	// them, and the observations come last: the findings statement must not take the commit's
	// own write for a newer verification.
	q := &Queued{hand: t.hand}
	if st.ObserveTakesJob && len(obsIDs) > 0 && twice {
		batch.Queue(st.ObserveOnce, job, obsIDs, obsStates, obsVersions, obsTimes).QueryRow(readChanged)
	} else if st.ObserveTakesJob && len(obsIDs) > 0 && !pipelinedBegin(t.db) {
		// The commit may run in a savepoint (Unobserved's test of xmin would not hold there).
		batch.Queue(st.ObserveReturning, job, obsIDs, obsStates, obsVersions, obsTimes).QueryRow(readChanged)
	} else if st.ObserveTakesJob && len(obsIDs) > 0 {
		// Its count alone says whether it left a row unobserved (rarely: changed or deleted
		// since its read, or verified since on a newer answer); only then are they asked for.
		observe, args := st.Observe, []any{job, obsIDs, obsStates, obsVersions, obsTimes}
		if rangeObserve {
			observe = st.ObserveInRange[0]
			if read.After != "" {
				observe, args = st.ObserveInRange[1], append(args, read.After)
			}
			args = append(args, read.UpTo)
		}
		batch.Queue(observe, args...).Exec(func(tag pgconn.CommandTag) error {
			if tag.RowsAffected() < int64(len(obsIDs)) {
				q.unobserved = func(ctx context.Context, tx pgx.Tx) error {
					var ids []string
					if err := tx.QueryRow(ctx, st.Unobserved, job, obsIDs).Scan(&ids); err != nil {
						return fmt.Errorf("unobserved rows: %w", err)
					}
					noteChanged(ids)
					return nil
				}
			}
			return nil
		})
		if rangeObserve {
			batch.Queue(restoreJoins)
		}
	}
	if len(f.ids) > 0 || len(clear.ids) > 0 {
		findings := st.Findings
		if observed {
			findings = st.FindingsObserved
		}
		args := append([]any{job, st.AggregateType, f.ids, f.kinds, f.locals, f.externals, f.details, f.commands,
			f.once, f.notARow, f.payloads, f.externalIDs, f.diffs, f.versions, f.decides, f.verified, f.answeredAt},
			clear.args()...)
		batch.Queue(findings, args...).
			QueryRow(func(row pgx.Row) error {
				var ids []string
				dest := []any{&res.Findings, &res.Commands, &ids}
				if q.hand != nil {
					dest = append(dest, &q.raw)
				}
				err := row.Scan(dest...)
				noteChanged(ids)
				return err
			})
	}
	// Before the observations in host columns, whose update may fire the host's triggers.
	batch.Queue(restoreSorts)
	if !st.ObserveTakesJob && len(obsIDs) > 0 {
		batch.Queue(st.Observe, obsIDs, obsStates, obsVersions, obsTimes).QueryRow(readChanged)
	}
	return q, nil
}

// readUnobserved notes the rows the observations statement left unobserved, if it did.
func (q *Queued) readUnobserved(ctx context.Context, tx pgx.Tx) error {
	if q == nil || q.unobserved == nil {
		return nil
	}
	return q.unobserved(ctx, tx)
}

// handOver hands the queued commands over in tx, if there are any and a Handover.
func (q *Queued) handOver(ctx context.Context, tx pgx.Tx) error {
	if q == nil || q.hand == nil || len(q.raw) == 0 {
		return nil
	}
	return q.hand.Hand(ctx, tx, q.raw)
}

// VerifiedAt is o's VerifiedAt, NULL if zero (the commit's time).
func VerifiedAt(o *reconcile.Outcome) pgtype.Timestamptz {
	return pgtype.Timestamptz{Time: o.VerifiedAt, Valid: !o.VerifiedAt.IsZero()}
}

// clearCols are the columns of the verified judgments without a finding that decide their
// records' findings (the findings statement's $18 to $22; FindingsObserved's $18 and $19,
// when observed).
type clearCols struct {
	observed                         bool
	ids, locals, externals, versions texts
	answeredAt                       times
}

// newClearCols returns columns with room for n outcomes, for FindingsObserved if observed.
func newClearCols(n int, observed bool) clearCols {
	c := clearCols{observed: observed, ids: make(texts, 0, n), locals: make(texts, 0, n)}
	if !observed {
		c.externals, c.versions, c.answeredAt = make(texts, 0, n), make(texts, 0, n), make(times, 0, n)
	}
	return c
}

// add adds outcome o.
func (c *clearCols) add(o *reconcile.Outcome) {
	c.ids, c.locals = append(c.ids, o.RecordID), append(c.locals, o.Local)
	if !c.observed {
		c.externals, c.versions, c.answeredAt = append(c.externals, o.External), append(c.versions, o.Version), append(c.answeredAt, VerifiedAt(o))
	}
}

// args are the columns as the findings statement's last parameters.
func (c *clearCols) args() []any {
	if c.observed {
		return []any{c.ids, c.locals}
	}
	return []any{c.ids, c.locals, c.externals, c.versions, c.answeredAt}
}

type findingCols struct {
	ids, kinds, locals, externals, details, commands texts
	externalIDs, versions                            texts
	once, notARow, decides, verified                 []bool
	// answeredAt are the Verified outcomes' answer times (NULL: the commit's).
	answeredAt times
	// payloads are the repair commands as JSON without their finding id; nil where none.
	payloads []*string
	// diffs are the decisions' Diffs as JSON; nil where none.
	diffs []*string
}

// newFindingCols returns columns with room for n outcomes.
func newFindingCols(n int) findingCols {
	return findingCols{
		ids: make(texts, 0, n), kinds: make(texts, 0, n), locals: make(texts, 0, n), externals: make(texts, 0, n),
		details: make(texts, 0, n), commands: make(texts, 0, n), externalIDs: make(texts, 0, n), versions: make(texts, 0, n),
		once: make([]bool, 0, n), notARow: make([]bool, 0, n), decides: make([]bool, 0, n), verified: make([]bool, 0, n),
		answeredAt: make(times, 0, n), payloads: make([]*string, 0, n), diffs: make([]*string, 0, n),
	}
}

// hasFinding reports whether o opens a finding (or finds its finding open).
func hasFinding(o *reconcile.Outcome) bool {
	d := &o.Decision
	return d.Kind != "" && (d.Verdict == reconcile.Repairable || d.Verdict == reconcile.NeedsReview)
}

// add adds outcome o, whose finding is of kind (none if empty).
func (f *findingCols) add(job string, o *reconcile.Outcome, kind string) {
	var payload *string
	if cmd := o.RepairCommand(job); cmd != nil {
		b, _ := json.Marshal(cmd) // strings and an integer: it cannot fail
		p := string(b)
		payload = &p
	}
	f.payloads = append(f.payloads, payload)
	var diffs *string
	if len(o.Decision.Diffs) > 0 {
		b, _ := json.Marshal(o.Decision.Diffs) // strings only: it cannot fail
		d := string(b)
		diffs = &d
	}
	f.diffs = append(f.diffs, diffs)
	f.once = append(f.once, o.Once)
	f.notARow = append(f.notARow, o.NotARow)
	f.ids = append(f.ids, o.RecordID)
	f.externalIDs = append(f.externalIDs, o.ExternalID)
	f.kinds = append(f.kinds, kind)
	f.versions = append(f.versions, o.Version)
	f.decides = append(f.decides, o.Decides())
	f.verified = append(f.verified, o.Verified)
	f.answeredAt = append(f.answeredAt, VerifiedAt(o))
	f.locals = append(f.locals, o.Local)
	f.externals = append(f.externals, o.External)
	f.details = append(f.details, o.Decision.Detail)
	f.commands = append(f.commands, o.Decision.Command)
}

// QueueForgetDeleted queues ForgetDeleted for job: when a cycle completes, the findings of rows
// it showed gone are closed.
func (s *Spec) QueueForgetDeleted(batch *pgx.Batch, job string) {
	batch.Queue(s.ForgetDeleted, job, reconcile.ResolvedByReconciler, ForgetNote)
}

// SendFenced runs batch in a transaction whose first statement is a compare-and-set: if it
// affects no row, nothing is written and the result is reconcile.ErrConcurrentRun. Then it runs
// after (if not nil) and hands over the commands q queued, in the same transaction. A commit
// counts as a write (Writes). Where it can, the transaction begins in the batch's own round
// trip (pipelinedBegin): a commit is then two round trips, the batch and COMMIT.
func (t *Table[L]) SendFenced(ctx context.Context, batch *pgx.Batch, what string, q *Queued,
	after func(ctx context.Context, tx pgx.Tx) error) error {
	var tx pgx.Tx
	var op string
	var err error
	if pipelinedBegin(t.db) {
		b := &pgx.Batch{}
		b.BeginTx(pgx.TxOptions{})
		b.QueuedQueries = append(b.QueuedQueries, batch.QueuedQueries...)
		br := t.db.SendBatch(ctx, b)
		tx = br.Tx()
		defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // no-op after Commit
		if _, err := br.Exec(); err != nil {
			// The batch's statements are prepared with the begin: a reconciler's table that
			// is missing fails here, and says to migrate.
			br.Close()
			if st, serr := t.Spec(ctx); serr == nil {
				return st.WrapError(what+": begin", err)
			}
			return fmt.Errorf("pgstore: %s: begin: %w", what, err)
		}
		op, err = readFenced(br)
	} else {
		if tx, err = t.db.Begin(ctx); err != nil {
			return fmt.Errorf("pgstore: %s: begin: %w", what, err)
		}
		defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // no-op after Commit
		op, err = sendFenced(ctx, tx, batch)
	}
	if err != nil {
		if op == "" {
			return err
		}
		st, serr := t.Spec(ctx)
		if serr != nil {
			return err
		}
		return st.WrapError(what+": "+op, err)
	}
	if err := q.readUnobserved(ctx, tx); err != nil {
		return fmt.Errorf("pgstore: %s: %w", what, err)
	}
	if after != nil {
		if err := after(ctx, tx); err != nil {
			return fmt.Errorf("pgstore: %s: %w", what, err)
		}
	}
	if err := q.handOver(ctx, tx); err != nil {
		return fmt.Errorf("pgstore: %s: %w", what, err)
	}
	if !pipelinedBegin(t.db) {
		if _, err := tx.Exec(ctx, restoreTimeZone); err != nil {
			return fmt.Errorf("pgstore: %s: restore TimeZone: %w", what, err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("pgstore: %s: commit transaction: %w", what, err)
	}
	t.NoteWrite()
	return nil
}

// SendFencedIn is SendFenced in tx, without after, which the caller commits (and then notes
// the write). Its errors, but reconcile.ErrConcurrentRun, say what failed and are the caller's
// to name.
func (t *Table[L]) SendFencedIn(ctx context.Context, tx pgx.Tx, batch *pgx.Batch, q *Queued) error {
	if op, err := sendFenced(ctx, tx, batch); err != nil {
		if op == "" {
			return err
		}
		return fmt.Errorf("%s: %w", op, err)
	}
	if err := q.readUnobserved(ctx, tx); err != nil {
		return err
	}
	return q.handOver(ctx, tx)
}

// pipelinedBegin reports whether db begins a transaction in a batch's round trip
// (pgx.Batch.BeginTx): a pool or a connection. A transaction given as the DB (its batches
// cannot begin one) and other implementations begin with a round trip of their own.
func pipelinedBegin(db DB) bool {
	switch db.(type) {
	case *pgxpool.Pool, *pgx.Conn:
		return true
	}
	return false
}

// sendFenced sends batch in tx, whose first statement is the compare-and-set; an error but
// reconcile.ErrConcurrentRun comes with the operation that failed.
func sendFenced(ctx context.Context, tx pgx.Tx, batch *pgx.Batch) (op string, err error) {
	return readFenced(tx.SendBatch(ctx, batch))
}

// readFenced reads the results of a batch whose next statement is the compare-and-set, and
// closes them.
func readFenced(br pgx.BatchResults) (op string, err error) {
	tag, err := br.Exec()
	if err != nil {
		br.Close()
		return "advance", err
	}
	if tag.RowsAffected() != 1 {
		br.Close()
		return "", reconcile.ErrConcurrentRun
	}
	if err := br.Close(); err != nil {
		return "write results", err
	}
	return "", nil
}
