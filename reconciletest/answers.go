package reconciletest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/reconcilekit/reconcile"
)

// Hostile answers: what a gateway (a proxy, a broken server, a hostile one) may answer instead
// of a state. None may cost more than the one row it is about.

// hostileAnswers are the seeds of FuzzAnswers and the answers of the conformance case.
var hostileAnswers = []string{
	"succeeded\x00",
	"succ\xffeeded",
	"\x00",
	"succeeded\nlevel=ERROR msg=forged",
	"\x1b[31mcanceled\x1b[0m",
	"\u202esucceeded",
	strings.Repeat("é", 5000),
	noisyText(10_000),
	"unexpected:paid->succeeded",
	"",
	"canceled",
	"succeeded",
	"processing",
}

// noisyText returns n bytes of letters and digits in no order, which no compression shortens:
// an index entry of them cannot be squeezed under PostgreSQL's limit of about 2.7 KB.
func noisyText(n int) string {
	const alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	r := rand.New(rand.NewPCG(1, 2))
	b := make([]byte, n)
	for i := range b {
		b[i] = alphabet[r.IntN(len(alphabet))]
	}
	return string(b)
}

func testHostileAnswers(t *testing.T, f Fixture) {
	for i, a := range hostileAnswers {
		checkAnswer(t, f, int64(i+1), a, false)
		checkAnswer(t, f, int64(len(hostileAnswers)+i+1), a, true)
	}
}

func testHostileFailure(t *testing.T, f Fixture) {
	sr, ok := f.Store().(reconcile.StatusReader)
	if !ok {
		t.Log("the store is not a reconcile.StatusReader: nothing to check")
		return
	}
	f.Insert(t, paidRow(1))
	// A server's message quoted in the error that stops the batch.
	gw := reconcile.GatewayFunc[string](func(context.Context, string) (string, error) {
		return "", fmt.Errorf("fake: key rejected: %s: %w", "\x00\xff"+noisyText(3000), reconcile.ErrAbortBatch)
	})
	ctx := context.Background()
	if _, err := reconcile.RunBatch(ctx, Config(f, "sweep", gw, 10)); !errors.Is(err, reconcile.ErrAbortBatch) {
		t.Fatalf("RunBatch = %v; want ErrAbortBatch", err)
	}
	st, err := sr.Status(ctx, "sweep")
	if err != nil {
		t.Fatal(err)
	}
	if st.LastFailureAt.IsZero() || !strings.Contains(st.LastFailure, "key rejected") || !utf8.ValidString(st.LastFailure) {
		t.Fatalf("failure %.80q at %v; want the failed batch recorded, as valid text", st.LastFailure, st.LastFailureAt)
	}
}

func testHostileFeed(t *testing.T, f Fixture) {
	laneStore(t, f)
	f.Insert(t, Row{ID: 1, ExternalID: "pi_1", Local: "paid"}, Row{ID: 2, ExternalID: "pi_2", Local: "pending"})
	noise := noisyText(10_000)
	// Rows' objects with hostile states, and objects no row can refer to, by ids no store can
	// keep as they are; a second pass sees them all again.
	objs := Objects("pi_1", "succeeded\x00", "pi_2", noise, "pi_\x00a", "succeeded", "pi_\xffb", "succeeded", "pi_"+noise, "succeeded")
	cfg := LaneConfig(t, f, "sweep", "reverse", NewFeed(map[string]reconcile.FeedPage[string]{
		"": {Next: "p1", Objects: objs}, "p1": {Next: "p2", Objects: objs}}))
	cfg.ReportMissing = true
	Step(t, cfg) // fails the test if the step does not commit
	Step(t, cfg)

	fs := Findings(t, f.Reviewer(), "sweep")
	rows, missing := map[string]int{}, map[string]bool{}
	for _, fd := range fs {
		if !kindShaped(fd.Kind) || !textShaped(fd.RecordID, reconcile.MaxExternalID) || !textShaped(fd.ExternalID, reconcile.MaxExternalID) {
			t.Errorf("finding of record %.80q (%d bytes), external id %.80q, kind %.80q (%d bytes): want valid, bounded text",
				fd.RecordID, len(fd.RecordID), fd.ExternalID, fd.Kind, len(fd.Kind))
		}
		if fd.Kind == reconcile.KindMissingLocally {
			missing[fd.RecordID] = true
		} else {
			rows[fd.RecordID]++
		}
	}
	if len(fs) != 5 || rows["1"] != 1 || rows["2"] != 1 || len(missing) != 3 {
		t.Fatalf("%d findings (%v of rows, missing %q); want one for each of rows 1 and 2 and three missing_locally", len(fs), rows, slices.Collect(maps.Keys(missing)))
	}
}

// FuzzAnswers feeds arbitrary gateway answers through the engine into the fixture's store:
// each answer is the state of three rows (pending, paid, failed) whose batches also hold a row
// answered normally, and then, in a second run, the kind and detail of a reconcile.ReviewError
// for them. Every batch must commit; each row with a bad answer is exactly one open finding,
// its kind printable UTF-8 of at most reconcile.MaxKind bytes, its
// states and detail valid and bounded; the normal row is in sync. Call it from a fuzz target
// with a fixture made once (each input uses jobs and rows of its own):
//
//	func FuzzAnswers(f *testing.F) { reconciletest.FuzzAnswers(f, newFixture(f)) }
//
// Its seeds (NUL, invalid UTF-8, control characters, 10 KB of text no compression shortens)
// run with the package's other tests; `go test -fuzz FuzzAnswers` searches for more.
func FuzzAnswers(f *testing.F, fx Fixture) {
	for _, a := range hostileAnswers {
		f.Add(a, false)
		f.Add(a, true)
	}
	var n atomic.Int64
	f.Fuzz(func(t *testing.T, answer string, asReviewError bool) {
		checkAnswer(t, fx, n.Add(1), answer, asReviewError)
	})
}

// checkAnswer runs two cycles of a job of its own over four rows of its own (ids from 10n+1),
// three answered with answer (as a state, or as a ReviewError's kind and detail) and the last
// with succeeded, and checks what the store recorded.
func checkAnswer(t *testing.T, f Fixture, n int64, answer string, asReviewError bool) {
	t.Helper()
	job := fmt.Sprintf("answers_%d", n)
	rows := []Row{
		{ID: 10*n + 1, Local: "pending"}, {ID: 10*n + 2, Local: "paid"}, {ID: 10*n + 3, Local: "failed"},
		{ID: 10*n + 4, Local: "paid"}, // answered normally
	}
	ids := make([]int64, len(rows))
	for i := range rows {
		rows[i].ExternalID = fmt.Sprintf("ext_%d", rows[i].ID)
		ids[i] = rows[i].ID
	}
	normal := rows[3].ExternalID
	f.Insert(t, rows...)
	defer f.Delete(t, ids...)
	gw := reconcile.GatewayFunc[string](func(_ context.Context, id string) (string, error) {
		switch {
		case id == normal:
			return "succeeded", nil
		case asReviewError:
			return "", &reconcile.ReviewError{Kind: answer, Detail: answer}
		}
		return answer, nil
	})
	// Two rows a batch: each bad answer shares its batch with another row.
	cfg := Config(f, job, gw, 2)
	for range 2 {
		Cycle(t, cfg, 5) // fails the test if a batch does not commit
	}

	fs := Findings(t, f.Reviewer(), job)
	for _, r := range rows {
		want := Classifier().Classify(r.Local, answer)
		switch {
		case r.ExternalID == normal:
			want = reconcile.Decision{Verdict: reconcile.InSync}
		case asReviewError:
			want = reconcile.Decision{Verdict: reconcile.NeedsReview, Kind: answer}
			if answer == "" {
				want.Kind = reconcile.KindRejected
			}
		}
		var mine []reconcile.Finding
		for _, fd := range fs {
			if fd.RecordID == fmt.Sprint(r.ID) {
				mine = append(mine, fd)
			}
		}
		if want.Verdict != reconcile.Repairable && want.Verdict != reconcile.NeedsReview {
			if len(mine) != 0 {
				t.Errorf("answer %.80q: row %d (%s) judged %s has findings %+v, want none", answer, r.ID, r.Local, want.Verdict, mine)
			}
			continue
		}
		if len(mine) != 1 || !mine[0].Open() {
			t.Errorf("answer %.80q: row %d (%s) has findings %+v, want one open", answer, r.ID, r.Local, mine)
			continue
		}
		fd := mine[0]
		if !kindShaped(fd.Kind) {
			t.Errorf("answer %.80q: row %d has kind %.80q (%d bytes), want printable UTF-8, at most %d bytes",
				answer, r.ID, fd.Kind, len(fd.Kind), reconcile.MaxKind)
		}
		if kindShaped(want.Kind) && fd.Kind != want.Kind {
			t.Errorf("answer %.80q: row %d has kind %q, want the classifier's %q as it is", answer, r.ID, fd.Kind, want.Kind)
		}
		for what, s := range map[string]string{"local state": fd.Local, "external state": fd.External} {
			if !textShaped(s, reconcile.MaxState) {
				t.Errorf("answer %.80q: row %d's finding has %s %.80q (%d bytes), want valid UTF-8 without NUL, at most %d bytes",
					answer, r.ID, what, s, len(s), reconcile.MaxState)
			}
		}
		if !textShaped(fd.Detail, reconcile.MaxDetail) {
			t.Errorf("answer %.80q: row %d's finding has detail %.80q (%d bytes), want valid UTF-8 without NUL, at most %d bytes",
				answer, r.ID, fd.Detail, len(fd.Detail), reconcile.MaxDetail)
		}
	}
	for _, r := range rows {
		at, ext, ok := f.Verified(t, job, r.ID)
		switch {
		case r.ExternalID == normal && (!ok || at.IsZero() || ext != "succeeded"):
			t.Errorf("answer %.80q: the row answered normally was verified %v at %v as %q, want succeeded", answer, ok, at, ext)
		case !textShaped(ext, reconcile.MaxState):
			t.Errorf("answer %.80q: row %d observed as %.80q (%d bytes), want valid UTF-8 without NUL, at most %d bytes",
				answer, r.ID, ext, len(ext), reconcile.MaxState)
		}
	}
}

// kindShaped reports whether s is a kind as findings keep them: printable UTF-8 (no control or
// formatting characters), at most reconcile.MaxKind bytes.
func kindShaped(s string) bool {
	return textShaped(s, reconcile.MaxKind) && !strings.ContainsFunc(s, func(r rune) bool { return !unicode.IsPrint(r) })
}

// textShaped reports whether s is valid UTF-8 without NUL, at most max bytes.
func textShaped(s string, max int) bool {
	return utf8.ValidString(s) && !strings.ContainsRune(s, 0) && len(s) <= max
}
