package stripetest

import (
	"encoding/json"
	"net/http"
	"net/url"
	"testing"
	"time"
)

// FuzzListQueries sends arbitrary query strings to the payout and balance transaction routes,
// which a client or a hostile caller may get wrong in any way: the fake must answer 200 or a
// Stripe-shaped 4xx with a JSON body, never panic or hang.
func FuzzListQueries(f *testing.F) {
	srv := NewServer(Options{Now: func() time.Time { return t0 }})
	f.Cleanup(srv.Close)
	srv.AddBalanceTransaction(BalanceTransaction{Type: "charge", Amount: 100, Created: t0.Add(-time.Hour), Description: "a\x00b"})
	auto := srv.AddPayout(Payout{})
	manual := srv.AddPayout(Payout{Manual: true, Amount: 1})
	for _, seed := range []string{
		"payout=" + auto + "&expand[]=data.source&limit=100",
		"payout=" + manual,
		"type=charge&source=ch_1&currency=USD&created[gte]=0",
		"starting_after=" + auto + "&ending_before=x",
		"arrival_date[lt]=99999999999&status=paid",
		"expand[0]=data.source.charge.payment_intent.latest_charge",
		"limit=0&payout=%00&type=%ff",
	} {
		f.Add("/v1/balance_transactions", seed)
		f.Add("/v1/payouts", seed)
		f.Add("/v1/charges", seed)
	}
	f.Fuzz(func(t *testing.T, path, rawQuery string) {
		switch path {
		case "/v1/balance_transactions", "/v1/payouts", "/v1/charges", "/v1/payouts/" + auto, "/v1/balance_transactions/x":
		default:
			path = "/v1/balance_transactions"
		}
		u, err := url.Parse(srv.URL() + path)
		if err != nil {
			t.Fatal(err)
		}
		u.RawQuery = rawQuery
		req, err := http.NewRequest(http.MethodGet, u.String(), nil)
		if err != nil {
			return // not a request a client could send
		}
		req.Header.Set("Authorization", "Bearer "+srv.Key())
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var body any
		if err := json.NewDecoder(res.Body).Decode(&body); err != nil {
			t.Fatalf("%s?%s: %d, body not JSON: %v", path, rawQuery, res.StatusCode, err)
		}
		if res.StatusCode != 200 && (res.StatusCode < 400 || res.StatusCode >= 500) {
			t.Fatalf("%s?%s: %d %v", path, rawQuery, res.StatusCode, body)
		}
	})
}
