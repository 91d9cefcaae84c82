package tieout

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"sync"
)

// MemoryLedger is a Ledger held in memory, for hosts' unit tests and examples. The zero value
// is empty and ready; it is safe for concurrent use.
type MemoryLedger struct {
	mu      sync.Mutex
	records []Booked
}

var _ Ledger = (*MemoryLedger)(nil)

// Book adds records, in order after the ones there.
func (l *MemoryLedger) Book(records ...Booked) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.records = append(l.records, records...)
}

// Booked returns the records booked under any of keys, in the order they were booked.
func (l *MemoryLedger) Booked(ctx context.Context, keys []Key) ([]Booked, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	want := make(map[Key]bool, len(keys))
	for _, k := range keys {
		want[k] = true
	}
	var out []Booked
	for _, b := range l.records {
		if want[Key{b.Kind, b.ID}] {
			out = append(out, b)
		}
	}
	return out, nil
}

// Unpaid returns the settled records in no group available before req.Before, or settled or
// available after req.Ahead, by the order they were booked (the position is the index of the
// last one returned).
func (l *MemoryLedger) Unpaid(ctx context.Context, req UnpaidRequest) (UnpaidPage, error) {
	if req.Limit < 1 {
		return UnpaidPage{}, errors.New("tieout: memory ledger: unpaid limit below 1")
	}
	start := 0
	if req.After != "" {
		n, err := strconv.Atoi(req.After)
		if err != nil || n < 0 {
			return UnpaidPage{}, errors.New("tieout: memory ledger: bad position")
		}
		start = n + 1
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	page := UnpaidPage{Next: req.After}
	for i := start; i < len(l.records) && len(page.Records) < req.Limit; i++ {
		b := l.records[i]
		at := b.AvailableOn
		if at.IsZero() {
			at = b.SettledAt
		}
		if b.SettledAt.IsZero() || b.Group != "" || !at.Before(req.Before) && !future(b, req.Ahead) {
			continue
		}
		page.Records = append(page.Records, b)
		page.Next = strconv.Itoa(i)
	}
	page.Records = slices.Clip(page.Records)
	return page, nil
}
