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
	storehook.Of = func(v any) storehook.Store { return hooks{v.(*Store)} }
}

type hooks struct{ s *Store }

func (h hooks) DB() storehook.DB { return h.s.db }

func (h hooks) Statements(ctx context.Context) (*storehook.Statements, error) {
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

func (h hooks) ReadRange(ctx context.Context, req reconcile.ReadRequest, cur *reconcile.Cursor, lower, upper string) ([]reconcile.Record[string], error) {
	st, err := h.s.statements(ctx)
	if err != nil {
		return nil, err
	}
	return h.s.readRange(ctx, st, req, cur, lower, upper)
}

func (h hooks) CheckPosition(pos string) error { return h.s.checkPosition(pos) }

func (h hooks) QueueResults(ctx context.Context, b *pgx.Batch, job string, outcomes []reconcile.Outcome, res *reconcile.CommitResult) error {
	st, err := h.s.statements(ctx)
	if err != nil {
		return err
	}
	h.s.queueResults(b, st, job, outcomes, res)
	return nil
}

func (h hooks) SendFenced(ctx context.Context, b *pgx.Batch, what string) error {
	return h.s.sendFenced(ctx, b, what)
}

func (h hooks) Lag(seconds float64) time.Duration { return lagOf(seconds) }
