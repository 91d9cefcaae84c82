package stripepayouts_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/memstore"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter/internal/keyecho"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripepayouts"
	"github.com/reconcilekit/reconcile/tieout"
)

// listerOn builds a lister over a server answering with h.
func listerOn(t *testing.T, h http.Handler, key string) *stripepayouts.Lister {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	gw, err := stripeadapter.NewObjectGateway(stripeadapter.GatewayConfig{Key: key, BaseURL: srv.URL}, stripeadapter.Payouts())
	if err != nil {
		t.Fatal(err)
	}
	l, err := stripepayouts.New(gw, stripepayouts.Config{})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// answering serves payouts and balance transactions from fixed bodies.
func answering(payouts, txns string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/v1/payouts":
			fmt.Fprint(w, payouts)
		case "/v1/balance_transactions":
			fmt.Fprint(w, txns)
		default:
			http.NotFound(w, r)
		}
	})
}

const okPayouts = `{"object":"list","has_more":false,"data":[{"id":"po_1","object":"payout","status":"paid","automatic":true,
	"reconciliation_status":"completed","amount":100,"currency":"usd","created":1700000000}]}`

// Answers that are not Stripe's (a proxy's {} or a list of foreign objects) are not answers:
// ErrUnavailable, nothing tied out on them. Hostile values in an answer that is one (NUL bytes,
// invalid UTF-8, 10 KB strings, a line without an id) reach the tie-out, which reports them
// and stores them safely; none stops the step or hides the rest of the payout.
func TestHostileAnswers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	g := tieout.Group{ID: "po_1", Itemized: true}
	for name, c := range map[string]struct{ payouts, txns string }{
		"payouts: not a list":       {`{}`, `{}`},
		"payouts: a payout no id":   {`{"object":"list","data":[{"object":"payout","status":"paid"}]}`, `{}`},
		"payouts: a forged id":      {`{"object":"list","data":[{"id":"po_1/../x","object":"payout","status":"paid"}]}`, `{}`},
		"payouts: null in the list": {`{"object":"list","data":[null]}`, `{}`},
		"lines: not a list":         {okPayouts, `{"data":[]}`},
		"lines: a body not JSON":    {okPayouts, `<html>oops</html>`},
		"lines: more, last no id":   {okPayouts, `{"object":"list","has_more":true,"data":[{"id":"","type":"charge"}]}`},
	} {
		t.Run(name, func(t *testing.T) {
			l := listerOn(t, answering(c.payouts, c.txns), "sk_test_x")
			var err error
			if strings.HasPrefix(name, "payouts") {
				_, err = l.Groups(ctx, "")
			} else {
				_, err = l.Members(ctx, g, "")
			}
			if !errors.Is(err, reconcile.ErrUnavailable) {
				t.Errorf("error %v, want ErrUnavailable", err)
			}
		})
	}

	long := strings.Repeat("x", 10_000)
	txns := `{"object":"list","has_more":false,"data":[
		{"id":"txn_1","type":"charge\u0000` + long + `","amount":50,"net":50,"currency":"usd","source":"ch_\u0000"},
		{"id":"","type":"charge","amount":25,"net":25,"currency":"usd"},
		{"id":"txn_3","type":"refund","amount":25,"net":25,"currency":"usd","status":"` + long + `\ud800"},
		null,
		{"id":"txn_5","type":"payout","amount":-100,"net":-100,"currency":"usd","source":"po_1"}]}`
	l := listerOn(t, answering(strings.Replace(okPayouts, `"status":"paid"`, `"status":"paid\u0000`+long+`"`, 1), txns), "sk_test_x")
	s := memstore.New[string, string](memstore.Options{})
	st, err := tieout.NewStep(tieout.StepConfig{Job: job, Lane: "sweep", Lister: l, Ledger: &tieout.MemoryLedger{}, Sink: s})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := st.RunBatch(ctx)
	if err != nil || rep.Scanned != 1 || rep.NewFindings == 0 {
		t.Fatalf("report %+v, error %v: want the payout tied out, its hostile lines reported", rep, err)
	}
	fs, err := s.ListFindings(ctx, reconcile.FindingQuery{Job: job})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fs {
		if len(f.Detail) > 5_000 || strings.ContainsRune(f.Detail+f.RecordID+f.ExternalID, 0) {
			t.Errorf("finding %s %s stored unsafely: %d bytes", f.RecordID, f.Kind, len(f.Detail))
		}
	}
}

// Positions come from storage: one that is not the lister's is an error, never a request.
func TestForgedPositionsAreRefusedWithoutACall(t *testing.T) {
	t.Parallel()
	calls := 0
	l := listerOn(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { calls++; http.NotFound(w, r) }), "sk_test_x")
	for _, pos := range []string{"x", `{"after":"po_1&limit=1"}`, `{"after":"ch_1","created":1}`, `{"created":-1}`, `{"at":"po_1&x=1","created":1}`, `{"after":"po_1","at":"po_2","created":1}`,
		`{"after":"po_1","created":1,"extra":1}`, "\x00", strings.Repeat("{", 10_000)} {
		if _, err := l.Groups(context.Background(), pos); err == nil {
			t.Errorf("position %.40q accepted", pos)
		}
	}
	for _, after := range []string{"txn_1&payout=po_2", "ch_1", "\xff"} {
		if _, err := l.Members(context.Background(), tieout.Group{ID: "po_1", Itemized: true}, after); err == nil {
			t.Errorf("member position %q accepted", after)
		}
	}
	if _, err := l.Members(context.Background(), tieout.Group{ID: "po_1?x=1", Itemized: true}, ""); err == nil {
		t.Error("a forged payout id was sent")
	}
	if calls != 0 {
		t.Errorf("%d calls made on forged positions", calls)
	}
}

// The API key never reaches an error, even from a server that echoes it into every answer.
func TestTheKeyReachesNoError(t *testing.T) {
	t.Parallel()
	for _, status := range []int{400, 401, 429, 500} {
		l := listerOn(t, keyecho.Handler(status, "", false), keyecho.Key)
		_, err1 := l.Groups(context.Background(), "")
		_, err2 := l.Members(context.Background(), tieout.Group{ID: "po_1", Itemized: true}, "")
		if err1 == nil || err2 == nil {
			t.Fatalf("status %d: errors %v, %v", status, err1, err2)
		}
		keyecho.AssertNone(t, fmt.Sprint(status), err1.Error(), err2.Error())
	}
}

// A payout whose lines Stripe refuses (400, 404) is a finding naming Stripe's message, and the
// key a server echoes into that message reaches neither the finding nor the payout's record.
func TestARefusedPayoutIsAFindingWithoutTheKey(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, c := range []struct {
		status int
		code   string
	}{{http.StatusBadRequest, ""}, {http.StatusNotFound, "resource_missing"}} {
		echo := keyecho.Handler(c.status, c.code, false)
		h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/v1/payouts" {
				w.Header().Set("Content-Type", "application/json")
				fmt.Fprint(w, okPayouts)
				return
			}
			echo.ServeHTTP(w, r)
		})
		l := listerOn(t, h, keyecho.Key)
		s := memstore.New[string, string](memstore.Options{})
		st, err := tieout.NewStep(tieout.StepConfig{Job: job, Lane: "sweep", Lister: l, Ledger: &tieout.MemoryLedger{}, Sink: s})
		if err != nil {
			t.Fatal(err)
		}
		rep, err := st.RunBatch(ctx)
		if err != nil || rep.Scanned != 1 || rep.NewFindings != 1 {
			t.Fatalf("%d: report %+v, error %v: want the payout's refusal as a finding", c.status, rep, err)
		}
		fs, err := s.ListFindings(ctx, reconcile.FindingQuery{Job: job})
		if err != nil || len(fs) != 1 || fs[0].Kind != tieout.KindLinesRefused || fs[0].RecordID != "po_1" {
			t.Fatalf("%d: findings %+v, %v", c.status, fs, err)
		}
		f := fs[0]
		if !strings.Contains(f.Detail, fmt.Sprintf("stripe answered %d", c.status)) {
			t.Errorf("%d: detail %q does not say what Stripe answered", c.status, f.Detail)
		}
		keyecho.AssertNone(t, fmt.Sprint(c.status, " finding"), f.Detail, f.Local, f.External, fmt.Sprint(f.Diffs))
		recs, err := s.ListGroups(ctx, reconcile.GroupQuery{})
		if err != nil || len(recs) != 1 || recs[0].Held {
			t.Fatalf("%d: records %+v, %v", c.status, recs, err)
		}
		keyecho.AssertNone(t, fmt.Sprint(c.status, " record"), fmt.Sprintf("%+v", recs[0]))
		if cur, _ := s.ReadLane(ctx, job, "sweep"); !strings.Contains(cur.Position, "po_1") {
			t.Errorf("%d: position %q: the walk did not go past the refused payout", c.status, cur.Position)
		}
	}
}
