package stripetest

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stripe/stripe-go/v82"
)

// disputeOf reads a dispute over HTTP.
func (f *fixture) disputeOf(t testing.TB, id, account string) *stripe.Dispute {
	t.Helper()
	d := &stripe.Dispute{}
	if err := f.call("/v1/disputes/"+id, nil, account, d); err != nil {
		t.Fatalf("retrieving dispute %s: %v", id, err)
	}
	return d
}

// allDisputeStatuses are the statuses Stripe documents, in the order of a dispute's life.
var allDisputeStatuses = []stripe.DisputeStatus{
	stripe.DisputeStatusWarningNeedsResponse, stripe.DisputeStatusWarningUnderReview, stripe.DisputeStatusWarningClosed,
	stripe.DisputeStatusNeedsResponse, stripe.DisputeStatusUnderReview, stripe.DisputeStatusWon,
	stripe.DisputeStatusLost, stripe.DisputeStatusPrevented,
}

func TestDispute(t *testing.T) {
	due := t0.Add(7 * 24 * time.Hour)
	for _, status := range allDisputeStatuses {
		inquiry := strings.HasPrefix(string(status), "warning_")
		withdrawn := !inquiry && status != stripe.DisputeStatusPrevented
		want := []string{"charge.dispute.created"}
		if withdrawn {
			want = []string{"charge.dispute.funds_withdrawn", "charge.dispute.created"}
		}
		t.Run("a dispute opened as "+string(status)+" records "+strings.Join(want, " and "), func(t *testing.T) {
			f := newFixture(t)
			id := f.charged(t, "", 1000, "kwd")
			did, err := f.srv.Dispute(id, 0, status, due)
			if err != nil {
				t.Fatal(err)
			}
			chID := f.latestCharge(t, id, "")
			d := f.disputeOf(t, did, "")
			if !strings.HasPrefix(did, "dp_") || len(did) != 27 || d.Object != "dispute" || d.Amount != 1000 ||
				d.Currency != "kwd" || d.Status != status || d.Charge.ID != chID || d.PaymentIntent.ID != id ||
				d.Created != t0.Unix() || d.EvidenceDetails == nil || d.EvidenceDetails.DueBy != due.Unix() ||
				d.Reason != stripe.DisputeReasonFraudulent || d.IsChargeRefundable != inquiry {
				t.Errorf("dispute %+v", d)
			}
			if ch := f.retrieveCharge(t, chID, ""); !ch.Disputed || ch.AmountRefunded != 0 {
				t.Errorf("charge disputed %v, refunded %d", ch.Disputed, ch.AmountRefunded)
			}
			events := f.eventsOf(t, "charge.dispute.*")
			if got := eventTypesOf(events); !slices.Equal(got, want) {
				t.Fatalf("events %v, want %v", got, want)
			}
			var snap stripe.Dispute
			if err := json.Unmarshal(events[0].Data.Raw, &snap); err != nil || snap.ID != did || snap.Status != status {
				t.Errorf("event object %+v, %v", snap, err)
			}
		})
	}
	t.Run("a partial dispute without a due date", func(t *testing.T) {
		f := newFixture(t)
		did, err := f.srv.Dispute(f.charged(t, "", 1000, "usd"), 250, stripe.DisputeStatusNeedsResponse, time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		_, body := rawGet(t, f.srv, "/v1/disputes/"+did, f.srv.Key())
		if d := f.disputeOf(t, did, ""); d.Amount != 250 || !strings.Contains(body, `"due_by":null`) {
			t.Errorf("dispute %+v: %s", d, body)
		}
	})
	t.Run("it fails without a captured charge, for a bad amount or status", func(t *testing.T) {
		f := newFixture(t)
		paid := f.charged(t, "", 100, "usd")
		for _, tc := range []struct {
			name   string
			id     string
			amount int64
			status stripe.DisputeStatus
		}{
			{"an unknown intent", "pi_nope", 1, stripe.DisputeStatusNeedsResponse},
			{"an intent without a charge", f.srv.AddPaymentIntent(PaymentIntent{Amount: 100}), 1, stripe.DisputeStatusNeedsResponse},
			{"an uncaptured charge", f.srv.AddPaymentIntent(PaymentIntent{Amount: 100, Status: stripe.PaymentIntentStatusRequiresCapture}), 1, stripe.DisputeStatusNeedsResponse},
			{"more than the charge", paid, 101, stripe.DisputeStatusNeedsResponse},
			{"a negative amount", paid, -1, stripe.DisputeStatusNeedsResponse},
			{"an unknown status", paid, 1, "open"},
		} {
			if _, err := f.srv.Dispute(tc.id, tc.amount, tc.status, time.Time{}); err == nil || !strings.HasPrefix(err.Error(), "stripetest: ") {
				t.Errorf("%s: err = %v", tc.name, err)
			}
		}
	})
}

func TestSetDisputeStatus(t *testing.T) {
	for _, from := range []stripe.DisputeStatus{stripe.DisputeStatusNeedsResponse, stripe.DisputeStatusWarningNeedsResponse} {
		for _, to := range allDisputeStatuses {
			want := "charge.dispute.updated"
			switch to {
			case stripe.DisputeStatusWon, stripe.DisputeStatusLost, stripe.DisputeStatusWarningClosed, stripe.DisputeStatusPrevented:
				want = "charge.dispute.closed"
			}
			wantEvents := []string{want}
			switch {
			case to == stripe.DisputeStatusWon && from == stripe.DisputeStatusNeedsResponse:
				wantEvents = []string{"charge.dispute.funds_reinstated", want}
			case from == stripe.DisputeStatusWarningNeedsResponse && want == "charge.dispute.updated" &&
				to != stripe.DisputeStatusWarningNeedsResponse && to != stripe.DisputeStatusWarningUnderReview:
				// The inquiry escalated to a chargeback: its funds leave now (newest first).
				wantEvents = []string{"charge.dispute.funds_withdrawn", want}
			}
			t.Run("a dispute from "+string(from)+" to "+string(to)+" records "+strings.Join(wantEvents, " and "), func(t *testing.T) {
				f, now := newClockFixture(t)
				id := f.charged(t, "", 1000, "usd")
				did, _ := f.srv.Dispute(id, 0, from, time.Time{})
				*now = t0.Add(time.Hour)
				if err := f.srv.SetDisputeStatus(did, to); err != nil {
					t.Fatal(err)
				}
				if d := f.disputeOf(t, did, ""); d.Status != to || d.Created != t0.Unix() {
					t.Errorf("dispute %+v", d)
				}
				if ch := f.retrieveCharge(t, f.latestCharge(t, id, ""), ""); !ch.Disputed {
					t.Error("the charge is no longer disputed")
				}
				events := f.listEvents(t, &stripe.EventListParams{CreatedRange: &stripe.RangeQueryParams{GreaterThanOrEqual: now.Unix()}})
				if got := eventTypesOf(events); !slices.Equal(got, wantEvents) {
					t.Fatalf("events %v, want %v", got, wantEvents)
				}
				for _, e := range events {
					var snap stripe.Dispute
					if err := json.Unmarshal(e.Data.Raw, &snap); err != nil || snap.Status != to {
						t.Errorf("%s object %+v, %v", e.Type, snap, err)
					}
				}
			})
		}
	}
	t.Run("events keep each status the dispute went through", func(t *testing.T) {
		f := newFixture(t)
		did, _ := f.srv.Dispute(f.charged(t, "", 10, "usd"), 0, stripe.DisputeStatusNeedsResponse, time.Time{})
		_ = f.srv.SetDisputeStatus(did, stripe.DisputeStatusUnderReview)
		_ = f.srv.SetDisputeStatus(did, stripe.DisputeStatusLost)
		var got []any
		for _, e := range f.eventsOf(t, "charge.dispute.*") {
			got = append(got, e.Data.Object["status"])
		}
		if want := []any{"lost", "under_review", "needs_response", "needs_response"}; !slices.Equal(got, want) {
			t.Errorf("snapshots %v, want %v", got, want)
		}
	})
	t.Run("it fails for an unknown dispute or status", func(t *testing.T) {
		f := newFixture(t)
		did, _ := f.srv.Dispute(f.charged(t, "", 10, "usd"), 0, stripe.DisputeStatusNeedsResponse, time.Time{})
		for _, err := range []error{
			f.srv.SetDisputeStatus("dp_nope", stripe.DisputeStatusLost),
			f.srv.SetDisputeStatus(did, "closed"),
		} {
			if err == nil || !strings.HasPrefix(err.Error(), "stripetest: ") {
				t.Errorf("err = %v", err)
			}
		}
	})
}

func TestListDisputes(t *testing.T) {
	ctx := context.Background()
	f, now := newClockFixture(t)
	a := f.charged(t, "", 1000, "usd")
	b := f.charged(t, "", 1000, "usd")
	var all []string // newest first
	for i, id := range []string{a, b, a} {
		*now = t0.Add(time.Duration(i) * time.Minute)
		d, err := f.srv.Dispute(id, 100, stripe.DisputeStatusNeedsResponse, time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		all = append([]string{d}, all...)
	}
	connected := f.charged(t, "acct_1", 500, "usd")
	dc, _ := f.srv.Dispute(connected, 0, stripe.DisputeStatusWarningNeedsResponse, time.Time{})

	list := func(t *testing.T, p *stripe.DisputeListParams) []string {
		t.Helper()
		var ids []string
		for d, err := range f.sc.V1Disputes.List(ctx, p) {
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, d.ID)
		}
		return ids
	}
	for _, tc := range []struct {
		name   string
		params stripe.DisputeListParams
		want   []string
	}{
		{"disputes are listed newest first", stripe.DisputeListParams{}, all},
		{"payment_intent selects an intent's disputes", stripe.DisputeListParams{PaymentIntent: stripe.String(a)}, []string{all[0], all[2]}},
		{"charge selects a charge's disputes", stripe.DisputeListParams{Charge: stripe.String(f.latestCharge(t, b, ""))}, all[1:2]},
		{"a charge and another intent select nothing", stripe.DisputeListParams{Charge: stripe.String(f.latestCharge(t, b, "")), PaymentIntent: stripe.String(a)}, nil},
		{"an unknown charge selects nothing", stripe.DisputeListParams{Charge: stripe.String("ch_nope")}, nil},
		{"created filters", stripe.DisputeListParams{CreatedRange: &stripe.RangeQueryParams{LesserThan: t0.Add(time.Minute).Unix()}}, all[2:]},
		{"a small limit pages through", stripe.DisputeListParams{ListParams: stripe.ListParams{Limit: stripe.Int64(1)}}, all},
		{"a connected account sees its own disputes", stripe.DisputeListParams{ListParams: stripe.ListParams{StripeAccount: stripe.String("acct_1")}}, []string{dc}},
		{"another account's intent selects nothing", stripe.DisputeListParams{PaymentIntent: stripe.String(connected)}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := list(t, &tc.params); !slices.Equal(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
	t.Run("has_more is exact in both directions", func(t *testing.T) {
		p := &stripe.DisputeListParams{ListParams: stripe.ListParams{Limit: stripe.Int64(2)}}
		first := &stripe.DisputeList{}
		if err := f.call("/v1/disputes", p, "", first); err != nil || len(first.Data) != 2 || !first.HasMore || first.URL != "/v1/disputes" {
			t.Fatalf("first page %+v, %v", first, err)
		}
		p.EndingBefore = stripe.String(all[2])
		back := &stripe.DisputeList{}
		if err := f.call("/v1/disputes", p, "", back); err != nil || len(back.Data) != 2 || back.HasMore || back.Data[0].ID != all[0] {
			t.Fatalf("backward page %+v, %v", back, err)
		}
	})
	t.Run("an unknown cursor is a 400", func(t *testing.T) {
		p := &stripe.DisputeListParams{ListParams: stripe.ListParams{EndingBefore: stripe.String("dp_nope")}}
		if se := stripeError(t, f.call("/v1/disputes", p, "", &stripe.DisputeList{}), http.StatusBadRequest); se.Param != "ending_before" {
			t.Errorf("got %+v", se)
		}
	})
	t.Run("a dispute is retrieved only by its account", func(t *testing.T) {
		if d := f.disputeOf(t, dc, "acct_1"); d.Amount != 500 || !d.IsChargeRefundable {
			t.Errorf("got %+v", d)
		}
		se := stripeError(t, f.call("/v1/disputes/"+dc, nil, "", &stripe.Dispute{}), http.StatusNotFound)
		if se.Code != stripe.ErrorCodeResourceMissing || se.Msg != "No such dispute: '"+dc+"'" {
			t.Errorf("got %+v", se)
		}
	})
	t.Run("a connected account's dispute events are its own", func(t *testing.T) {
		p := &stripe.EventListParams{ListParams: stripe.ListParams{StripeAccount: stripe.String("acct_1")}, Type: stripe.String("charge.dispute.*")}
		events := f.listEvents(t, p)
		if got := eventTypesOf(events); !slices.Equal(got, []string{"charge.dispute.created"}) || events[0].Account != "acct_1" {
			t.Errorf("events %v", got)
		}
		if got := len(f.eventsOf(t, "charge.dispute.created")); got != 3 {
			t.Errorf("the platform sees %d dispute.created events, want 3", got)
		}
	})
}

func TestAnEscalatedInquiryWithdrawsAndAWonChargebackReinstates(t *testing.T) {
	f, _ := newClockFixture(t)
	id := f.charged(t, "", 1000, "usd")
	did, _ := f.srv.Dispute(id, 0, stripe.DisputeStatusWarningNeedsResponse, time.Time{})
	if _, err := f.srv.Refund(id, 100); err != nil {
		t.Fatalf("a refund during an inquiry = %v, want it made, as Stripe allows", err)
	}
	for _, to := range []stripe.DisputeStatus{stripe.DisputeStatusNeedsResponse, stripe.DisputeStatusUnderReview} {
		if err := f.srv.SetDisputeStatus(did, to); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := f.srv.Refund(id, 100); err == nil || !strings.Contains(err.Error(), "charged back") {
		t.Fatalf("a refund under a chargeback = %v, want it refused as Stripe refuses it (charge_disputed)", err)
	}
	if err := f.srv.SetDisputeStatus(did, stripe.DisputeStatusWon); err != nil {
		t.Fatal(err)
	}
	if _, err := f.srv.Refund(id, 100); err != nil {
		t.Fatalf("a refund after the chargeback was won = %v, want it made", err)
	}
	var withdrawn, reinstated int
	for _, e := range eventTypesOf(f.listEvents(t, &stripe.EventListParams{})) {
		withdrawn += map[bool]int{true: 1}[e == "charge.dispute.funds_withdrawn"]
		reinstated += map[bool]int{true: 1}[e == "charge.dispute.funds_reinstated"]
	}
	if withdrawn != 1 || reinstated != 1 {
		t.Errorf("funds_withdrawn %d, funds_reinstated %d; want one each: the inquiry escalated once, the chargeback was won", withdrawn, reinstated)
	}
}
