package stripeadapter

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stripe/stripe-go/v82"
)

// lookahead is the PaymentIntents' look-ahead, which these tests exercise.
type lookahead = lookaheadOf[*stripe.PaymentIntent]

func newLookahead(ttl time.Duration, size int) *lookahead {
	return newLookaheadOf(ttl, size, PaymentIntents().ID, time.Now)
}

func TestLookaheadServesFreshObjectsOnceWithinItsSize(t *testing.T) {
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c := newLookahead(10*time.Second, 3)
	c.now = func() time.Time { return clock }
	pis := func(ids ...string) []*stripe.PaymentIntent {
		var out []*stripe.PaymentIntent
		for _, id := range ids {
			out = append(out, &stripe.PaymentIntent{ID: id, Status: stripe.PaymentIntentStatusSucceeded})
		}
		return out
	}
	ask := func(ids ...string) map[string]bool {
		m := map[string]bool{}
		for _, id := range ids {
			m[id] = true
		}
		return m
	}
	listed := clock
	c.put(pis("pi_1", "pi_2", "pi_3", "pi_4"), clock) // pi_1 dropped for room
	if got := c.take(ask("pi_1", "pi_2"), time.Time{}); len(got) != 1 || got["pi_2"].Object == nil || !got["pi_2"].At.Equal(listed) {
		t.Fatalf("take = %v, want pi_2 only (pi_1 beyond the size), dated by its listing", got)
	}
	if got := c.take(ask("pi_2"), time.Time{}); len(got) != 0 {
		t.Fatalf("pi_2 served twice: %v", got)
	}
	clock = clock.Add(9 * time.Second)
	c.put(pis("pi_5"), clock)
	if got := c.take(ask("pi_3"), time.Time{}); len(got) != 1 {
		t.Fatalf("take = %v, want pi_3, 9 s old", got)
	}
	clock = clock.Add(time.Second) // pi_4 is 10 s old now, pi_5 1 s
	if got := c.take(ask("pi_4", "pi_5"), time.Time{}); len(got) != 1 || got["pi_5"].Object == nil {
		t.Fatalf("take = %v, want pi_5 only (pi_4 at its TTL)", got)
	}
	if len(c.objs) != 0 {
		t.Fatalf("%d objects kept, want none", len(c.objs))
	}
	var nilCache *lookahead
	nilCache.put(pis("pi_1"), clock)
	if got := nilCache.take(ask("pi_1"), time.Time{}); len(got) != 0 {
		t.Fatalf("a nil look-ahead served %v", got)
	}
}

// An object listed before the moment the engine asks from (its cycle's start) is not served,
// however fresh, and is not kept either.
func TestLookaheadServesNothingListedBeforeSince(t *testing.T) {
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c := newLookahead(time.Hour, 10)
	c.now = func() time.Time { return clock }
	c.put([]*stripe.PaymentIntent{{ID: "pi_1"}, {ID: "pi_2"}}, clock)
	clock = clock.Add(time.Second)
	c.put([]*stripe.PaymentIntent{{ID: "pi_3"}}, clock)
	got := c.take(map[string]bool{"pi_1": true, "pi_3": true}, clock)
	if len(got) != 1 || got["pi_3"].Object == nil || !got["pi_3"].At.Equal(clock) {
		t.Fatalf("take since %v = %v; want pi_3 alone, listed then", clock, got)
	}
	if got := c.take(map[string]bool{"pi_1": true}, time.Time{}); len(got) != 0 {
		t.Fatalf("pi_1, refused once, was kept: %v", got)
	}
	if got := c.take(map[string]bool{"pi_2": true}, clock.Add(-time.Second)); len(got) != 1 {
		t.Fatalf("pi_2, listed at since, = %v; want it served", got)
	}
}

func TestLookaheadIsSafeForConcurrentUse(t *testing.T) {
	c := newLookahead(time.Minute, 500)
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				id := fmt.Sprintf("pi_%d_%d", w, i)
				c.put([]*stripe.PaymentIntent{{ID: id, Status: stripe.PaymentIntentStatusSucceeded}}, time.Now())
				c.take(map[string]bool{id: true, fmt.Sprintf("pi_%d_%d", (w+1)%8, i): true}, time.Time{})
			}
		}()
	}
	wg.Wait()
	if len(c.objs) > 500 {
		t.Fatalf("%d objects kept, more than the size", len(c.objs))
	}
}
