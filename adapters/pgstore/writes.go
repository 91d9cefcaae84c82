package pgstore

import (
	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/internal/hosttable"
)

var _ reconcile.WriteCounter = (*Store[string])(nil)

// Writes counts the writes made through this Store (a reconcile.WriteCounter): batch and lane
// commits, the commits of pgshard's leases over it, failures recorded, findings resolved or
// reopened. A cache of its Status (a reconcile.Monitor keeps one) is current as long as the
// count has not changed since its read; another Store's writes do not change it. A write inside
// a host's transaction (ResolveFindingIn) counts when it is made, before that transaction
// commits; the repair dispatcher's observer covers its own commits.
func (s *Store[L]) Writes() uint64 { return s.table.Writes() }

// HostTable returns the host table the store reads and commits through, for the packages of
// this module built on a Store (pgshard), which alone can make a hosttable.Key.
func (s *Store[L]) HostTable(hosttable.Key) *hosttable.Table[L] { return s.table }
