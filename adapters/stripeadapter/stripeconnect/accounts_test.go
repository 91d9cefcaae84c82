package stripeconnect_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stripe/stripe-go/v82"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/pgstore"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripeconnect"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripepolicy"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripetest"
	"github.com/reconcilekit/reconcile/internal/pgtest"
)

// connectWorld is a platform with connected accounts: a payments table with an account column
// and an accounts table in PostgreSQL, each account's PaymentIntents in stripetest, and a
// fan-out with one sweep per account, all sharing one limiter.
type connectWorld struct {
	t       *testing.T
	srv     *stripetest.Server
	pool    *pgxpool.Pool
	limiter *reconcile.AdaptiveLimiter
	base    *stripeadapter.ObjectGateway[*stripe.PaymentIntent] // the platform's; ForAccount per account
	next    int64                                               // the next row id

	mu  sync.Mutex
	now time.Time // the fan-out's clock, for sit-outs
}

func newConnectWorld(t *testing.T) *connectWorld {
	t.Helper()
	w := &connectWorld{t: t, srv: stripetest.NewServer(stripetest.Options{}), next: 1, now: time.Now()}
	t.Cleanup(w.srv.Close)
	w.pool = pgtest.Pool(t)
	ctx := context.Background()
	for _, q := range []string{
		`CREATE TABLE accounts (id text PRIMARY KEY)`,
		`CREATE TABLE payments (id bigint PRIMARY KEY, account text NOT NULL, external_id text, status text NOT NULL,
			created_at timestamptz NOT NULL, updated_at timestamptz NOT NULL)`,
	} {
		if _, err := w.pool.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	if err := pgstore.Migrate(ctx, w.pool, pgstore.Tables{}); err != nil {
		t.Fatal(err)
	}
	var err error
	if w.limiter, err = reconcile.NewAdaptiveLimiter(reconcile.AdaptiveOptions{Rate: 1000, Burst: 10}); err != nil {
		t.Fatal(err)
	}
	w.base, err = stripeadapter.NewObjectGateway(stripeadapter.GatewayConfig{Key: w.srv.Key(), BaseURL: w.srv.URL()}, stripeadapter.PaymentIntents())
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func (w *connectWorld) clock() time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.now
}

func (w *connectWorld) later(d time.Duration) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.now = w.now.Add(d)
}

// addAccount connects an account with rows paid payments, their intents succeeded, created a
// minute apart, and lists it in the accounts table.
func (w *connectWorld) addAccount(acct string, rows int) {
	w.t.Helper()
	ctx := context.Background()
	base := time.Now().Add(-48 * time.Hour).Truncate(time.Second)
	pis := make([]stripetest.PaymentIntent, rows)
	for i := range pis {
		pis[i] = stripetest.PaymentIntent{Account: acct, Status: stripe.PaymentIntentStatusSucceeded,
			Created: base.Add(time.Duration(i) * time.Minute), Amount: 100}
	}
	for i, pi := range w.srv.AddPaymentIntents(pis) {
		created := base.Add(time.Duration(i) * time.Minute)
		if _, err := w.pool.Exec(ctx, `INSERT INTO payments VALUES ($1, $2, $3, 'paid', $4, $4)`, w.next, acct, pi, created); err != nil {
			w.t.Fatal(err)
		}
		w.next++
	}
	if _, err := w.pool.Exec(ctx, `INSERT INTO accounts VALUES ($1)`, acct); err != nil {
		w.t.Fatal(err)
	}
}

func (w *connectWorld) removeAccount(acct string) {
	w.t.Helper()
	if _, err := w.pool.Exec(context.Background(), `DELETE FROM accounts WHERE id = $1`, acct); err != nil {
		w.t.Fatal(err)
	}
}

func (w *connectWorld) listAccounts(ctx context.Context) ([]string, error) {
	rows, err := w.pool.Query(ctx, `SELECT id FROM accounts`)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

// build is a host's Build: the account's rows, its gateway (Stripe-Account), its own job.
func (w *connectWorld) build(acct string) ([]reconcile.FanOutJob, error) {
	store, err := pgstore.New(w.pool, pgstore.Config{Table: "payments",
		Filter: pgstore.Filter{AnyOf: [][]pgstore.Cond{{{Column: "account", Op: pgstore.Eq, Value: acct}}}}})
	if err != nil {
		return nil, err
	}
	gw, err := w.base.ForAccount(acct) // the same client and key; every request carries Stripe-Account
	if err != nil {
		return nil, err
	}
	job := "payments@" + acct
	r, err := reconcile.New(reconcile.Config[string, *stripe.PaymentIntent]{Job: job, Source: store, Sink: store, Gateway: gw,
		Classifier: stripepolicy.PaymentIntentPolicy(), ExternalState: stripepolicy.PaymentIntentState, BatchSize: 3, Limiter: w.limiter})
	if err != nil {
		return nil, err
	}
	return []reconcile.FanOutJob{{Job: job, Batches: r, Status: store}}, nil
}

func (w *connectWorld) fanOut() *reconcile.FanOut {
	w.t.Helper()
	f, err := reconcile.NewFanOut(reconcile.FanOutConfig{Name: "payments@connect", Accounts: w.listAccounts, Build: w.build, Now: w.clock})
	if err != nil {
		w.t.Fatal(err)
	}
	return f
}

// tick runs one tick of the fan-out: until its round completes or every account left sits out.
func (w *connectWorld) tick(f *reconcile.FanOut) reconcile.TickReport {
	w.t.Helper()
	tr, err := reconcile.RunTick(context.Background(), f, reconcile.TickBudget{})
	if err != nil {
		w.t.Fatal(err)
	}
	return tr
}

// cycles returns the completed cycles of each account's job.
func (w *connectWorld) cycles() map[string]int64 {
	w.t.Helper()
	rows, err := w.pool.Query(context.Background(), `SELECT job, cycles_completed FROM reconcile_cursors`)
	if err != nil {
		w.t.Fatal(err)
	}
	out := map[string]int64{}
	for rows.Next() {
		var job string
		var n int64
		if err := rows.Scan(&job, &n); err != nil {
			w.t.Fatal(err)
		}
		out[job] = n
	}
	if err := rows.Err(); err != nil {
		w.t.Fatal(err)
	}
	return out
}

// accountRequests counts the PaymentIntent requests made for acct ("" for the platform).
func (w *connectWorld) accountRequests(acct string) int {
	return w.srv.AccountRequests(stripetest.ListPaymentIntents, acct) + w.srv.AccountRequests(stripetest.RetrievePaymentIntent, acct)
}

func TestConnectFanOutKeepsEachAccountApartAndFollowsTheAccountsTable(t *testing.T) {
	t.Parallel()
	w := newConnectWorld(t)
	w.addAccount("acct_big", 7) // three batches of three: 3, 3, 1
	w.addAccount("acct_small", 2)
	f := w.fanOut()
	if tr := w.tick(f); !tr.Wrapped || tr.Scanned != 9 {
		t.Fatalf("first round: %+v; want it complete over 9 rows", tr)
	}
	if got := w.cycles(); got["payments@acct_big"] != 1 || got["payments@acct_small"] != 1 || len(got) != 2 {
		t.Fatalf("cycles %v: want one per account, each under its own job", got)
	}
	// Every request acted for an account, never for the platform, and each account's rows
	// were asked about under its own account: a row asked under another account is not found
	// there and would be a finding.
	if n := w.accountRequests(""); n != 0 {
		t.Errorf("%d requests went out without Stripe-Account", n)
	}
	for _, r := range w.srv.Log() {
		if r.StripeAccount != "acct_big" && r.StripeAccount != "acct_small" {
			t.Errorf("request %s %s for account %q", r.Method, r.Path, r.StripeAccount)
		}
	}
	var findings int
	if err := w.pool.QueryRow(context.Background(), `SELECT count(*) FROM reconcile_findings`).Scan(&findings); err != nil {
		t.Fatal(err)
	}
	if findings != 0 {
		t.Errorf("%d findings; every row agrees with its own account's intent", findings)
	}

	// acct_new is connected and acct_small leaves the table: the next round follows both.
	w.addAccount("acct_new", 4)
	w.removeAccount("acct_small")
	before := w.accountRequests("acct_small")
	if tr := w.tick(f); !tr.Wrapped || tr.Scanned != 11 {
		t.Fatalf("second round: %+v; want it complete over acct_big's 7 rows and acct_new's 4", tr)
	}
	got := w.cycles()
	if got["payments@acct_big"] != 2 || got["payments@acct_new"] != 1 || got["payments@acct_small"] != 1 {
		t.Errorf("cycles %v: want acct_big 2, acct_new 1, acct_small still 1", got)
	}
	if n := w.accountRequests("acct_small"); n != before {
		t.Errorf("the removed account was asked %d more times", n-before)
	}
	if n := w.accountRequests("acct_new"); n == 0 {
		t.Error("the new account was never asked")
	}
}

// One account answering 429 or 503 to everything does not stall the others: they complete
// their cycles and the round completes while it sits out; a 429 also slows the shared limiter
// for everyone. When it recovers it completes its cycle in the next round.
func TestConnectFanOutOneFailingAccountDoesNotStallTheOthers(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name       string
		status     int
		wantSlowed bool
	}{
		{"429", http.StatusTooManyRequests, true},
		{"503", http.StatusServiceUnavailable, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			w := newConnectWorld(t)
			for _, a := range []string{"acct_a", "acct_b", "acct_c"} {
				w.addAccount(a, 5)
			}
			for _, route := range []stripetest.Route{stripetest.ListPaymentIntents, stripetest.RetrievePaymentIntent} {
				w.srv.Inject(route, stripetest.Fault{Status: tt.status, Account: "acct_b"})
			}
			f := w.fanOut()
			if tr := w.tick(f); !tr.Wrapped || tr.Deferred {
				t.Fatalf("tick %+v: want the round complete without acct_b", tr)
			}
			if got := w.cycles(); got["payments@acct_a"] != 1 || got["payments@acct_c"] != 1 || got["payments@acct_b"] != 0 {
				t.Fatalf("cycles %v: want acct_a and acct_c complete, acct_b not", got)
			}
			if slowed := w.limiter.Limit() < 1000; slowed != tt.wantSlowed {
				t.Errorf("shared limiter at %v: slowed %t, want %t", w.limiter.Limit(), slowed, tt.wantSlowed)
			}
			// Health names the account that cannot be checked, and only it.
			h := f.Health(context.Background(), reconcile.HealthPolicy{MaxStaleFindings: -1})
			if h.OK || len(h.Reasons()) != 1 || !strings.HasPrefix(h.Reasons()[0], "account acct_b (job payments@acct_b): ") {
				t.Errorf("health with acct_b failing: %s", h)
			}
			// While acct_b sits out, the next round goes on without it: it is asked once per
			// sit-out, not on every turn.
			if tr := w.tick(f); !tr.Wrapped {
				t.Fatalf("second round: %+v", tr)
			}
			if n := w.accountRequests("acct_b"); n > 2 {
				t.Errorf("acct_b was asked %d times while sitting out", n)
			}
			w.srv.ClearFaults()
			w.later(time.Hour)
			if tr := w.tick(f); !tr.Wrapped {
				t.Fatalf("after recovery: %+v; want the round complete", tr)
			}
			if got := w.cycles(); got["payments@acct_b"] != 1 || got["payments@acct_a"] != 3 {
				t.Errorf("cycles %v: want acct_b's first cycle, acct_a's third", got)
			}
			h = f.Health(context.Background(), reconcile.HealthPolicy{MaxStaleFindings: -1})
			names := []string{}
			for _, c := range h.Checks {
				names = append(names, fmt.Sprintf("%s=%t", c.Name, c.OK))
			}
			if !slices.Equal(names, []string{"account:acct_a=true", "account:acct_b=true", "account:acct_c=true"}) {
				t.Errorf("health %s: %v", h, names)
			}
		})
	}
}

// The accounts check finds, both ways, where the accounts table and the platform's connected
// accounts disagree: an account Stripe connects that no row names (missing_locally), a row
// naming an account Stripe never had, and one naming an account since disconnected
// (missing_externally).
func TestAccountsCheckFindsMissingAccountsBothWays(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := stripetest.NewServer(stripetest.Options{})
	t.Cleanup(srv.Close)
	pool := pgtest.Pool(t)
	if _, err := pool.Exec(ctx, `CREATE TABLE connected_accounts (id bigint PRIMARY KEY, stripe_account_id text NOT NULL,
		status text NOT NULL, created_at timestamptz NOT NULL, updated_at timestamptz NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	if err := pgstore.Migrate(ctx, pool, pgstore.Tables{}); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-24 * time.Hour)
	known := []string{}
	for i := range 3 {
		known = append(known, srv.AddAccount(stripetest.Account{Created: old.Add(time.Duration(i) * time.Minute),
			ChargesEnabled: true, PayoutsEnabled: true, DetailsSubmitted: true}))
	}
	unknownLocally := srv.AddAccount(stripetest.Account{Created: old})
	disconnected := srv.AddAccount(stripetest.Account{Created: old})
	if err := srv.DisconnectAccount(disconnected); err != nil {
		t.Fatal(err)
	}
	neverExisted := "acct_1NeverExisted0000"
	for i, id := range append(known, disconnected, neverExisted) {
		if _, err := pool.Exec(ctx, `INSERT INTO connected_accounts VALUES ($1, $2, 'active', $3, $3)`, i+1, id, old); err != nil {
			t.Fatal(err)
		}
	}
	store, err := pgstore.New(pool, pgstore.Config{Table: "connected_accounts", ExternalIDColumn: "stripe_account_id"})
	if err != nil {
		t.Fatal(err)
	}
	gw, err := stripeadapter.NewObjectGateway(stripeadapter.GatewayConfig{Key: srv.Key(), BaseURL: srv.URL()}, stripeadapter.Accounts())
	if err != nil {
		t.Fatal(err)
	}
	check, err := stripeconnect.NewAccountsCheck(stripeconnect.AccountsCheckConfig[string]{Gateway: gw, Store: store, BatchSize: 2})
	if err != nil {
		t.Fatal(err)
	}
	tr, err := reconcile.RunTick(ctx, check, reconcile.TickBudget{})
	if err != nil {
		t.Fatal(err)
	}
	if !tr.Wrapped {
		t.Fatalf("tick %+v: want both directions checked", tr)
	}
	findings, err := store.ListFindings(ctx, reconcile.FindingQuery{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, f := range findings {
		if f.Job != stripeconnect.DefaultAccountsJob {
			t.Errorf("finding under job %q", f.Job)
		}
		got[f.ExternalID] = f.Kind
	}
	want := map[string]string{
		unknownLocally: reconcile.KindMissingLocally,
		disconnected:   reconcile.KindMissingExternally,
		neverExisted:   reconcile.KindMissingExternally,
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("findings %v, want %v", got, want)
	}
	// Accounts are the platform's: no request acts for a connected account.
	for _, r := range srv.Log() {
		if r.StripeAccount != "" {
			t.Errorf("%s %s sent Stripe-Account %s", r.Method, r.Path, r.StripeAccount)
		}
	}
	// The sweep lists accounts by its rows' created window and retrieves only the two the list
	// did not show (their 403 is the missing_externally).
	if srv.Requests(stripetest.ListAccounts) == 0 || srv.Requests(stripetest.RetrieveAccount) != 2 {
		t.Errorf("%d list and %d retrieve calls; want the list read and the 2 rows it did not show retrieved",
			srv.Requests(stripetest.ListAccounts), srv.Requests(stripetest.RetrieveAccount))
	}
	// A second run finds nothing new: the findings are open already.
	tr, err = reconcile.RunTick(ctx, check, reconcile.TickBudget{})
	if err != nil || !tr.Wrapped || tr.NewFindings != 0 {
		t.Errorf("second check: %+v, %v; want it complete with no new findings", tr, err)
	}
}

// Stripe's 403 account_invalid means "no such account" for a platform request naming the
// account in its path, and "this account is gone" for a request acting for it: the first is a
// missing account, the second fails the batch (the fan-out sits the account out, and the
// accounts check reports it).
func TestAccountInvalidIsNotFoundOnlyForThePlatform(t *testing.T) {
	t.Parallel()
	srv := stripetest.NewServer(stripetest.Options{})
	t.Cleanup(srv.Close)
	gone := srv.AddAccount(stripetest.Account{})
	pi := srv.AddPaymentIntent(stripetest.PaymentIntent{Account: gone, Status: stripe.PaymentIntentStatusSucceeded})
	if err := srv.DisconnectAccount(gone); err != nil {
		t.Fatal(err)
	}
	cfg := stripeadapter.GatewayConfig{Key: srv.Key(), BaseURL: srv.URL()}
	accounts, err := stripeadapter.NewObjectGateway(cfg, stripeadapter.Accounts())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := accounts.Fetch(context.Background(), gone); !errors.Is(err, reconcile.ErrNotFound) {
		t.Errorf("retrieve of a disconnected account: %v, want ErrNotFound", err)
	}
	intents, err := stripeadapter.NewObjectGateway(cfg, stripeadapter.PaymentIntents())
	if err != nil {
		t.Fatal(err)
	}
	forGone, err := intents.ForAccount(gone)
	if err != nil {
		t.Fatal(err)
	}
	_, err = forGone.Fetch(context.Background(), pi)
	if !errors.Is(err, reconcile.ErrAbortBatch) || errors.Is(err, reconcile.ErrNotFound) {
		t.Errorf("retrieve for a disconnected account: %v, want ErrAbortBatch", err)
	}
}
