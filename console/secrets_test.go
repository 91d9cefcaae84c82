package console_test

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/reconcilekit/reconcile"
)

// A Stripe test key, as a broken server could echo it back into an error or a finding's detail.
const leakedKey = "sk_test_51FakeKeyForTheConsoleTests0123456789abcdef"

// Failures as pgstore records them: the batch's error text, with SQL and a key in it.
const (
	sqlFailure    = `reconcile: job sweep: read: pgstore: read batch: ERROR: column h.status does not exist (SQLSTATE 42703)`
	stripeFailure = `stripeadapter: retrieve pi_1: reconcile: external system unavailable: Invalid API Key provided: ` + leakedKey
	laneFailure   = `reconcile: lane events: feed: stripeadapter: list events: reconcile: rate limited by external system: key ` + leakedKey
)

func TestPagesShowAClassifiedReasonNeverAFailuresTextOrAKey(t *testing.T) {
	t.Parallel()
	w := newWorld(t, false, nil)
	ctx := context.Background()
	for job, text := range map[string]string{"sweep": sqlFailure, "idle": stripeFailure} {
		if err := w.store.RecordFailure(ctx, job, errors.New(text)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.store.RecordLaneFailure(ctx, "idle", "events", errors.New(laneFailure)); err != nil {
		t.Fatal(err)
	}
	// A finding whose detail (a gateway's ReviewError) carries the key, as a careless adapter
	// could write it.
	if _, err := w.pool.Exec(ctx, `INSERT INTO payments (id, external_id, status) VALUES ('k1', 'pi_1TestLeaky00001', 'paid')`); err != nil {
		t.Fatal(err)
	}
	b, err := w.store.Read(ctx, reconcile.ReadRequest{Job: "hostile", Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.store.Commit(ctx, reconcile.Commit{Job: "hostile", Cursor: b.Cursor, Next: `["k1"]`, Outcomes: []reconcile.Outcome{{
		RecordID: "k1", ExternalID: "pi_1TestLeaky00001", Local: "paid", External: "?", Verified: true,
		Decision: reconcile.Decision{Verdict: reconcile.NeedsReview, Kind: reconcile.KindRejected,
			Detail: "No such payment_intent; request made with " + leakedKey},
	}}}); err != nil {
		t.Fatal(err)
	}
	fs, err := w.store.ListFindings(ctx, reconcile.FindingQuery{RecordID: "k1", Limit: 1})
	if err != nil || len(fs) != 1 {
		t.Fatalf("Findings(k1) = %v, %v", fs, err)
	}
	id := fs[0].ID
	// Resolved with a note that pastes the key, and reopened: the history shows both notes.
	tok := w.token(t, id, "alice")
	if r := w.do(t, "POST", fmt.Sprintf("/findings/%d/resolve", id), "alice", url.Values{
		"csrf_token": {tok}, "resolution": {"accepted"}, "note": {"Stripe said " + leakedKey}}); r.status != 303 {
		t.Fatalf("resolve = %d:\n%s", r.status, r.body)
	}

	overview := w.get(t, "/", "alice")
	pages := map[string]string{
		"overview": overview,
		"list":     w.get(t, "/findings?state=all", "alice"),
		"finding":  w.get(t, fmt.Sprintf("/findings/%d", id), "alice"),
	}
	for name, body := range pages {
		for _, bad := range []string{"sk_test_", "FakeKeyForTheConsoleTests", "SQLSTATE", "h.status", "does not exist", "Invalid API Key"} {
			if strings.Contains(body, bad) {
				t.Errorf("the %s page shows %q", name, bad)
			}
		}
	}
	for job, want := range map[string][]string{
		"sweep": {"database error"},
		"idle":  {"external system unavailable", "rate limited"},
	} {
		sec := section(t, overview, job)
		for _, reason := range want {
			if !strings.Contains(sec, reason) {
				t.Errorf("the overview's %s section lacks the reason %q:\n%s", job, reason, sec)
			}
		}
	}
	finding := pages["finding"]
	for _, want := range []string{"No such payment_intent; request made with", "Stripe said"} {
		if !strings.Contains(finding, want) {
			t.Errorf("the finding's page lacks %q (the text around the key):\n%s", want, finding)
		}
	}
}
