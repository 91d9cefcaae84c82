package stripepayouts_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter"
)

// The events lister reads each payout an event names anew: a final one is a group, once
// however many events name it; one not final yet is left to its later event; one Stripe does
// not have is skipped; an event whose object is not a payout is skipped. When a payout cannot
// be read, the page ends before its event, which the next step reads again (and then fails on).
func TestTheEventsListerReadsEachPayoutAnewAndCutsBeforeOneItCannotRead(t *testing.T) {
	t.Parallel()
	created := time.Now().Add(-time.Hour).Unix()
	event := func(id, typ, object string) string {
		return fmt.Sprintf(`{"id":%q,"object":"event","type":%q,"created":%d,"data":{"object":%s}}`, id, typ, created, object)
	}
	payout := func(id, status, recon string) string {
		return fmt.Sprintf(`{"id":%q,"object":"payout","status":%q,"automatic":true,"reconciliation_status":%q,"amount":100,"currency":"usd","created":%d}`,
			id, status, recon, created)
	}
	events := []string{ // oldest first
		event("evt_1", "payout.reconciliation_completed", `{"id":"po_1","object":"payout"}`),
		event("evt_2", "payout.paid", `{"id":"po_1","object":"payout"}`),
		event("evt_3", "payout.failed", `{"id":"po_gone","object":"payout"}`),
		event("evt_4", "payout.paid", `{"id":"ch_1","object":"charge"}`),
		event("evt_5", "payout.paid", `{"id":"po_pending","object":"payout"}`),
		event("evt_6", "payout.failed", `{"id":"po_down","object":"payout"}`),
		event("evt_7", "payout.failed", `{"id":"po_2","object":"payout"}`),
	}
	var mu sync.Mutex
	retrieves := map[string]int{}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		mu.Lock()
		defer mu.Unlock()
		switch id, _ := strings.CutPrefix(r.URL.Path, "/v1/payouts/"); {
		case r.URL.Path == "/v1/events":
			after := r.URL.Query().Get("ending_before")
			var newer []string
			for i := len(events) - 1; i >= 0; i-- {
				if strings.Contains(events[i], `"id":"`+after+`"`) {
					break
				}
				newer = append(newer, events[i])
			}
			fmt.Fprintf(w, `{"object":"list","has_more":false,"data":[%s]}`, strings.Join(newer, ","))
		case id == "po_1" || id == "po_2":
			retrieves[id]++
			fmt.Fprint(w, payout(id, "paid", "completed"))
		case id == "po_pending":
			retrieves[id]++
			fmt.Fprint(w, payout(id, "in_transit", "in_progress"))
		case id == "po_down":
			retrieves[id]++
			w.WriteHeader(http.StatusInternalServerError)
			fmt.Fprint(w, `{"error":{"type":"api_error","message":"down"}}`)
		default:
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprint(w, `{"error":{"type":"invalid_request_error","code":"resource_missing","message":"No such payout"}}`)
		}
	})
	el, err := listerOn(t, h, "sk_test_x").EventsLister(stripeadapter.EventsOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	start := fmt.Sprintf(`{"after":"evt_0","until":%d}`, created-1)
	page, err := el.Groups(ctx, start)
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Groups) != 1 || page.Groups[0].ID != "po_1" || page.End || !strings.Contains(page.Next, `"after":"evt_5"`) {
		t.Fatalf("page %+v: want po_1 alone, cut before evt_6", page)
	}
	if len(page.Positions) != 1 || !strings.Contains(page.Positions[0], `"after":"evt_1"`) {
		t.Errorf("positions %q: want po_1's, just past evt_1 that named it", page.Positions)
	}
	mu.Lock()
	if retrieves["po_1"] != 1 || retrieves["po_pending"] != 1 {
		t.Errorf("retrieves %v: want po_1 read once for its two events", retrieves)
	}
	mu.Unlock()
	// The next step starts at the payout that could not be read: its error now.
	if _, err := el.Groups(ctx, page.Next); !errors.Is(err, reconcile.ErrUnavailable) {
		t.Fatalf("the step after the cut: %v, want ErrUnavailable", err)
	}
}

// An event naming a payout Stripe refuses to retrieve (a 400) does not hold the lane at that
// event for ever: like one Stripe does not have, it is skipped with a warning, and the sweep,
// which stays behind the lane, ties the payout out if it is one.
func TestAnEventWhosePayoutIsRefusedDoesNotHoldTheLane(t *testing.T) {
	t.Parallel()
	created := time.Now().Add(-time.Hour).Unix()
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/v1/events":
			fmt.Fprintf(w, `{"object":"list","has_more":false,"data":[{"id":"evt_2","object":"event","type":"payout.paid","created":%d,
				"data":{"object":{"id":"po_ok","object":"payout"}}},{"id":"evt_1","object":"event","type":"payout.failed","created":%d,
				"data":{"object":{"id":"po_bad","object":"payout"}}}]}`, created, created)
		case "/v1/payouts/po_ok":
			fmt.Fprintf(w, `{"id":"po_ok","object":"payout","status":"paid","automatic":true,"reconciliation_status":"completed","amount":1,"currency":"usd","created":%d}`, created)
		default:
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprint(w, `{"error":{"type":"invalid_request_error","message":"this payout cannot be retrieved"}}`)
		}
	})
	el, err := listerOn(t, h, "sk_test_x").EventsLister(stripeadapter.EventsOptions{})
	if err != nil {
		t.Fatal(err)
	}
	page, err := el.Groups(context.Background(), fmt.Sprintf(`{"after":"evt_0","until":%d}`, created-1))
	if err != nil || len(page.Groups) != 1 || page.Groups[0].ID != "po_ok" || !strings.Contains(page.Next, "evt_2") {
		t.Fatalf("page %+v, %v: want po_ok, past both events", page, err)
	}
}
