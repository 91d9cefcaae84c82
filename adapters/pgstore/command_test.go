package pgstore_test

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/pgstore"
)

// Every field of reconcile.Command reaches the outbox: the payload is the core's Command
// marshalled in Go, with the finding's id, so a field added to Command needs nothing here.
func TestEveryFieldOfACommandReachesTheOutboxPayload(t *testing.T) {
	t.Parallel()
	pool, s := newStore(t, pgstore.Config{})
	laneExec(t, pool, `INSERT INTO payments (id, external_id, status) VALUES (7, 'pi_7', 'pending')`)
	o := laneVerified("7", laneMissedSuccess)
	if _, err := s.CommitLane(context.Background(), reconcile.LaneCommit{Job: "sweep", Lane: "events", Next: "p1",
		Outcomes: []reconcile.Outcome{o}}); err != nil {
		t.Fatal(err)
	}
	var name, payload string
	var findingID int64
	if err := pool.QueryRow(context.Background(), `SELECT event_type, payload::text, finding_id FROM reconcile_outbox`).
		Scan(&name, &payload, &findingID); err != nil {
		t.Fatal(err)
	}
	want := o.RepairCommand("sweep")
	want.FindingID = findingID
	got, err := reconcile.DecodeCommand(name, []byte(payload))
	if err != nil {
		t.Fatal(err)
	}
	if got != *want {
		t.Errorf("decoded %+v; want %+v", got, *want)
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal([]byte(payload), &fields); err != nil {
		t.Fatal(err)
	}
	ct := reflect.TypeFor[reconcile.Command]()
	for i := range ct.NumField() {
		f := ct.Field(i)
		tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if tag == "-" {
			continue
		}
		if tag == "" {
			tag = f.Name
		}
		if _, ok := fields[tag]; !ok {
			t.Errorf("payload %s lacks %s (Command.%s)", payload, tag, f.Name)
		}
		if reflect.ValueOf(got).Field(i).IsZero() {
			t.Errorf("Command.%s is empty in %+v; the test should fill every field", f.Name, got)
		}
	}
}
