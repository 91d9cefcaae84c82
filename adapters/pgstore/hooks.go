package pgstore

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/internal/storehook"
)

// What a Store lends the packages built on it (pgshard), through internal/storehook, so that
// they read and commit exactly as the Store does without widening its API.
func init() {
	storehook.Of = func(v any) any { return v.(interface{ hooks() any }).hooks() }
}

func (s *Store[L]) hooks() any { return hooks[L]{s} }

type hooks[L any] struct{ s *Store[L] }

func (h hooks[L]) DB() storehook.DB { return h.s.db }

func (h hooks[L]) Statements(ctx context.Context) (*storehook.Statements, error) {
	st, err := h.s.statements(ctx)
	if err != nil {
		return nil, err
	}
	p := st.parts
	return &storehook.Statements{
		Host: p.host, Keys: p.keys, KeyTypes: st.keyset.keyTypes,
		Where: p.where, FilterArgs: st.filterArgs,
		LagValue: p.lagValue(), LagFrom: p.lagFrom,
		ForgetDeleted: st.forgetDeleted, ForgetNote: forgetNote,
	}, nil
}

func (h hooks[L]) ReadRange(ctx context.Context, req reconcile.ReadRequest, cur *reconcile.Cursor, lower, upper string) ([]reconcile.Record[L], error) {
	st, err := h.s.statements(ctx)
	if err != nil {
		return nil, err
	}
	return h.s.readRange(ctx, st, req, cur, lower, upper)
}

func (h hooks[L]) CheckPosition(pos string) error { return h.s.checkPosition(pos) }

func (h hooks[L]) QueueResults(ctx context.Context, b *pgx.Batch, job string, outcomes []reconcile.Outcome, res *reconcile.CommitResult) (storehook.Deliver, error) {
	st, err := h.s.statements(ctx)
	if err != nil {
		return nil, err
	}
	return h.s.queueResults(b, st, job, outcomes, res, nil).run, nil
}

func (h hooks[L]) SendFenced(ctx context.Context, b *pgx.Batch, what string, deliver storehook.Deliver) error {
	return h.s.sendFenced(ctx, b, what, deliver)
}

func (h hooks[L]) Lag(seconds float64) time.Duration { return lagOf(seconds) }
