package stripetest

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stripe/stripe-go/v82"
)

func TestRetrievePaymentIntent(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	created := t0.Add(-time.Hour)
	f.srv.AddPaymentIntent(PaymentIntent{
		ID: "pi_full", Status: stripe.PaymentIntentStatusSucceeded, Created: created.Add(300 * time.Millisecond),
		Amount: 1250, Currency: "eur", Metadata: map[string]string{"order": "42"},
	})
	defaultsID := f.srv.AddPaymentIntent(PaymentIntent{Amount: 5})
	f.srv.AddPaymentIntent(PaymentIntent{ID: "pi_connected", Account: "acct_1", Amount: 7})
	f.srv.AddAccount(Account{ID: "acct_2"}) // an account of the platform without intents

	t.Run("a known intent is returned with all its fields", func(t *testing.T) {
		pi, err := f.sc.V1PaymentIntents.Retrieve(ctx, "pi_full", nil)
		if err != nil {
			t.Fatal(err)
		}
		if pi.ID != "pi_full" || pi.Object != "payment_intent" || pi.Amount != 1250 || pi.Currency != "eur" ||
			pi.Status != stripe.PaymentIntentStatusSucceeded || pi.Created != created.Unix() ||
			pi.Livemode || pi.Metadata["order"] != "42" || pi.AmountReceived != 1250 {
			t.Errorf("got %+v", pi)
		}
	})
	t.Run("an intent added with zero values gets Stripe's defaults and a generated id", func(t *testing.T) {
		pi, err := f.sc.V1PaymentIntents.Retrieve(ctx, defaultsID, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(pi.ID, "pi_") || len(pi.ID) != 27 {
			t.Errorf("id = %q, want pi_ and 24 characters", pi.ID)
		}
		if pi.Status != stripe.PaymentIntentStatusRequiresPaymentMethod || pi.Currency != "usd" ||
			pi.Created != t0.Unix() || pi.Metadata == nil {
			t.Errorf("got %+v", pi)
		}
	})
	t.Run("an unknown id is a 404 resource_missing like Stripe's", func(t *testing.T) {
		_, err := f.sc.V1PaymentIntents.Retrieve(ctx, "pi_x", nil)
		se := stripeError(t, err, http.StatusNotFound)
		if se.Code != stripe.ErrorCodeResourceMissing || se.Type != stripe.ErrorTypeInvalidRequest ||
			se.Param != "intent" || se.Msg != "No such payment_intent: 'pi_x'" ||
			se.DocURL != "https://stripe.com/docs/error-codes/resource-missing" {
			t.Errorf("got %+v", se)
		}
	})
	t.Run("another account's intent is a 404", func(t *testing.T) {
		for _, account := range []*string{nil, stripe.String("acct_2")} {
			p := &stripe.PaymentIntentRetrieveParams{Params: stripe.Params{StripeAccount: account}}
			_, err := f.sc.V1PaymentIntents.Retrieve(ctx, "pi_connected", p)
			stripeError(t, err, http.StatusNotFound)
		}
		p := &stripe.PaymentIntentRetrieveParams{Params: stripe.Params{StripeAccount: stripe.String("acct_2")}}
		_, err := f.sc.V1PaymentIntents.Retrieve(ctx, "pi_full", p)
		stripeError(t, err, http.StatusNotFound)
	})
	t.Run("the owning account's header finds a connected account's intent", func(t *testing.T) {
		p := &stripe.PaymentIntentRetrieveParams{Params: stripe.Params{StripeAccount: stripe.String("acct_1")}}
		pi, err := f.sc.V1PaymentIntents.Retrieve(ctx, "pi_connected", p)
		if err != nil || pi.Amount != 7 {
			t.Fatalf("got %+v, %v", pi, err)
		}
	})
	t.Run("expand is accepted for a field that can be expanded", func(t *testing.T) {
		p := &stripe.PaymentIntentRetrieveParams{}
		p.AddExpand("latest_charge")
		if _, err := f.sc.V1PaymentIntents.Retrieve(ctx, "pi_full", p); err != nil {
			t.Fatal(err)
		}
	})
}

func TestPaymentIntentAccessors(t *testing.T) {
	f := newFixture(t)
	meta := map[string]string{"k": "v"}
	id := f.srv.AddPaymentIntent(PaymentIntent{Created: t0.Add(1500 * time.Millisecond), Metadata: meta})
	meta["k"] = "changed"

	t.Run("PaymentIntent returns the stored intent with second precision and its own metadata", func(t *testing.T) {
		pi, ok := f.srv.PaymentIntent(id)
		if !ok || !pi.Created.Equal(t0.Add(time.Second)) || pi.Metadata["k"] != "v" {
			t.Fatalf("got %+v, %v", pi, ok)
		}
		pi.Metadata["k"] = "mine"
		if again, _ := f.srv.PaymentIntent(id); again.Metadata["k"] != "v" {
			t.Errorf("metadata shared with the caller")
		}
	})
	t.Run("PaymentIntent reports an unknown id", func(t *testing.T) {
		if _, ok := f.srv.PaymentIntent("pi_nope"); ok {
			t.Error("found an unknown id")
		}
	})
	t.Run("SetStatus changes the status Stripe answers", func(t *testing.T) {
		if err := f.srv.SetStatus(id, stripe.PaymentIntentStatusCanceled); err != nil {
			t.Fatal(err)
		}
		pi, err := f.sc.V1PaymentIntents.Retrieve(context.Background(), id, nil)
		if err != nil || pi.Status != stripe.PaymentIntentStatusCanceled || pi.CanceledAt != t0.Unix() {
			t.Fatalf("got %+v, %v", pi, err)
		}
	})
	t.Run("SetStatus fails for an unknown id or status", func(t *testing.T) {
		if err := f.srv.SetStatus("pi_nope", stripe.PaymentIntentStatusSucceeded); err == nil || !strings.HasPrefix(err.Error(), "stripetest: ") {
			t.Errorf("unknown id: err = %v", err)
		}
		if err := f.srv.SetStatus(id, "paid"); err == nil {
			t.Error("unknown status accepted")
		}
	})
	t.Run("adding a used id panics", func(t *testing.T) {
		defer func() {
			if recover() == nil {
				t.Error("no panic")
			}
		}()
		f.srv.AddPaymentIntent(PaymentIntent{ID: id})
	})
}

func TestListPaymentIntentsOrderAndFilters(t *testing.T) {
	f := newFixture(t)
	// Added out of order; b and c share a created time, so c (added later) comes first.
	addAt(f.srv, "pi_", 10, 20, 20, 5, 30) // pi_a..pi_e
	f.srv.AddPaymentIntent(PaymentIntent{ID: "pi_other", Account: "acct_1", Created: t0})
	f.srv.AddAccount(Account{ID: "acct_2"})
	at := func(o int64) int64 { return t0.Unix() + o }

	for _, tc := range []struct {
		name   string
		params stripe.PaymentIntentListParams
		want   []string
	}{
		{"no filter lists newest first, later-added first among equal times", stripe.PaymentIntentListParams{}, []string{"pi_e", "pi_c", "pi_b", "pi_a", "pi_d"}},
		{"created[gt] excludes the bound", stripe.PaymentIntentListParams{CreatedRange: &stripe.RangeQueryParams{GreaterThan: at(10)}}, []string{"pi_e", "pi_c", "pi_b"}},
		{"created[gte] includes the bound", stripe.PaymentIntentListParams{CreatedRange: &stripe.RangeQueryParams{GreaterThanOrEqual: at(10)}}, []string{"pi_e", "pi_c", "pi_b", "pi_a"}},
		{"created[lt] excludes the bound", stripe.PaymentIntentListParams{CreatedRange: &stripe.RangeQueryParams{LesserThan: at(20)}}, []string{"pi_a", "pi_d"}},
		{"created[lte] includes the bound", stripe.PaymentIntentListParams{CreatedRange: &stripe.RangeQueryParams{LesserThanOrEqual: at(20)}}, []string{"pi_c", "pi_b", "pi_a", "pi_d"}},
		{"created[gt] and created[lt] combine", stripe.PaymentIntentListParams{CreatedRange: &stripe.RangeQueryParams{GreaterThan: at(5), LesserThan: at(30)}}, []string{"pi_c", "pi_b", "pi_a"}},
		{"an exact created matches only that second", stripe.PaymentIntentListParams{Created: stripe.Int64(at(20))}, []string{"pi_c", "pi_b"}},
		{"an empty created range lists nothing", stripe.PaymentIntentListParams{CreatedRange: &stripe.RangeQueryParams{GreaterThan: at(30)}}, nil},
		{"a connected account sees only its own intents", stripe.PaymentIntentListParams{ListParams: stripe.ListParams{StripeAccount: stripe.String("acct_1")}}, []string{"pi_other"}},
		{"an account without intents sees none", stripe.PaymentIntentListParams{ListParams: stripe.ListParams{StripeAccount: stripe.String("acct_2")}}, nil},
		{"customer is accepted and ignored, and expand does not filter", stripe.PaymentIntentListParams{Customer: stripe.String("cus_1"), Expand: []*string{stripe.String("data.latest_charge")}}, []string{"pi_e", "pi_c", "pi_b", "pi_a", "pi_d"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := f.listIntentIDs(t, &tc.params)
			if !slices.Equal(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestListPaymentIntentsPagination(t *testing.T) {
	f := newFixture(t)
	// 25 intents; pairs share a created time so cursors must break ties by insertion order.
	offsets := make([]int, 25)
	for i := range offsets {
		offsets[i] = i / 2
	}
	added := addAt(f.srv, "pi_", offsets...)
	newestFirst := reversed(added)

	for _, tc := range []struct {
		name        string
		params      stripe.PaymentIntentListParams
		want        []string
		wantHasMore bool
	}{
		{"the first page has more", lp(10, "", ""), newestFirst[:10], true},
		{"starting_after continues with the next page", lp(10, newestFirst[9], ""), newestFirst[10:20], true},
		{"the last page has no more", lp(10, newestFirst[19], ""), newestFirst[20:], false},
		{"a page ending exactly at the end has no more", lp(5, newestFirst[19], ""), newestFirst[20:], false},
		{"starting_after the oldest is empty", lp(10, newestFirst[24], ""), []string{}, false},
		{"ending_before returns the items just newer, newest first", lp(10, "", newestFirst[24]), newestFirst[14:24], true},
		{"ending_before near the newest has no more", lp(10, "", newestFirst[5]), newestFirst[:5], false},
		{"ending_before the newest is empty", lp(10, "", newestFirst[0]), []string{}, false},
		{"ending_before with exactly limit newer items has no more", lp(5, "", newestFirst[5]), newestFirst[:5], false},
		{"the default limit is 10", stripe.PaymentIntentListParams{}, newestFirst[:10], true},
		{"a limit of 100 is allowed", lp(100, "", ""), newestFirst, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			page, err := f.intentPage(t, &tc.params)
			if err != nil {
				t.Fatal(err)
			}
			if got := pageIDs(page); !slices.Equal(got, tc.want) || page.HasMore != tc.wantHasMore {
				t.Errorf("got %v has_more=%v, want %v has_more=%v", got, page.HasMore, tc.want, tc.wantHasMore)
			}
			if page.URL != "/v1/payment_intents" || !strings.HasPrefix(string(page.LastResponse.RawJSON), `{"object":"list",`) {
				t.Errorf("list envelope: url %q, body %.40s", page.URL, page.LastResponse.RawJSON)
			}
			// The same page through stripe-go's iterator, which reverses backward pages.
			tc.params.Single = true
			want := tc.want
			if tc.params.EndingBefore != nil {
				want = reversed(want)
			}
			if got := f.listIntentIDs(t, &tc.params); !slices.Equal(got, want) {
				t.Errorf("single page through the iterator: got %v, want %v", got, want)
			}
		})
	}
	t.Run("auto-pagination forward visits every intent once, newest first", func(t *testing.T) {
		if got := f.listIntentIDs(t, ptr(lp(3, "", ""))); !slices.Equal(got, newestFirst) {
			t.Errorf("got %v", got)
		}
	})
	t.Run("auto-pagination backward visits every newer intent, oldest first", func(t *testing.T) {
		if got := f.listIntentIDs(t, ptr(lp(4, "", newestFirst[24]))); !slices.Equal(got, added[1:]) {
			t.Errorf("got %v, want %v", got, added[1:])
		}
	})
	t.Run("a filter and a cursor outside it combine", func(t *testing.T) {
		p := lp(3, newestFirst[20], "")
		p.CreatedRange = &stripe.RangeQueryParams{GreaterThanOrEqual: t0.Unix() + 5}
		page, err := f.intentPage(t, &p)
		if err != nil || len(page.Data) != 0 || page.HasMore {
			t.Errorf("got %v %v, %v", pageIDs(page), page.HasMore, err)
		}
	})
}

func lp(limit int64, startingAfter, endingBefore string) stripe.PaymentIntentListParams {
	p := stripe.PaymentIntentListParams{ListParams: stripe.ListParams{Limit: stripe.Int64(limit)}}
	if startingAfter != "" {
		p.StartingAfter = stripe.String(startingAfter)
	}
	if endingBefore != "" {
		p.EndingBefore = stripe.String(endingBefore)
	}
	return p
}

func ptr[T any](v T) *T { return &v }

func TestListPaymentIntentsRejectsBadParameters(t *testing.T) {
	f := newFixture(t)
	addAt(f.srv, "pi_", 1, 2, 3)
	f.srv.AddPaymentIntent(PaymentIntent{ID: "pi_connected", Account: "acct_1"})
	unknown := stripe.PaymentIntentListParams{}
	unknown.Filters.AddFilter("status", "", "succeeded")
	unknownOp := stripe.PaymentIntentListParams{}
	unknownOp.Filters.AddFilter("created", "after", "1")
	both := lp(10, "pi_a", "pi_b")

	for _, tc := range []struct {
		name      string
		params    stripe.PaymentIntentListParams
		wantParam string
		wantCode  stripe.ErrorCode
		wantMsg   string
	}{
		{"a limit of 0 is refused", lp(0, "", ""), "limit", "", "greater than or equal to 1"},
		{"a limit above 100 is refused", lp(101, "", ""), "limit", "", "less than or equal to 100"},
		{"an unknown parameter is refused by name", unknown, "status", "parameter_unknown", "Received unknown parameter: status"},
		{"an unknown created operator is refused", unknownOp, "created[after]", "parameter_unknown", "Received unknown parameter: created[after]"},
		{"starting_after an unknown id is refused", lp(10, "pi_zz", ""), "starting_after", stripe.ErrorCodeResourceMissing, "No such payment_intent: 'pi_zz'"},
		{"ending_before an unknown id is refused", lp(10, "", "pi_zz"), "ending_before", stripe.ErrorCodeResourceMissing, "No such payment_intent: 'pi_zz'"},
		{"a cursor of another account is refused", lp(10, "pi_connected", ""), "starting_after", stripe.ErrorCodeResourceMissing, "No such payment_intent"},
		{"both cursors at once are refused", both, "ending_before", "", "only specify one"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := f.intentPage(t, &tc.params)
			se := stripeError(t, err, http.StatusBadRequest)
			if se.Type != stripe.ErrorTypeInvalidRequest || se.Param != tc.wantParam || se.Code != tc.wantCode || !strings.Contains(se.Msg, tc.wantMsg) {
				t.Errorf("got %+v", se)
			}
		})
	}
	t.Run("a non-integer limit or created is refused", func(t *testing.T) {
		for _, q := range []string{"limit=ten", "created[gt]=yesterday", "created="} {
			res, body := rawGet(t, f.srv, "/v1/payment_intents?"+q, f.srv.Key())
			if res.StatusCode != http.StatusBadRequest || !strings.Contains(body, "Invalid integer") {
				t.Errorf("%s: %d %s", q, res.StatusCode, body)
			}
		}
	})
}
