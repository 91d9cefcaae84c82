package pgstore

import "sync/atomic"

// writes counts the writes made through every Store of this process (Writes).
var writes atomic.Uint64

func noteWrite() { writes.Add(1) }

// Writes counts the writes made through every Store of this process: batch, lane and shard
// commits, failures recorded, findings resolved or reopened. A cache of Status (package
// prommetrics keeps one) is current as long as the count has not changed since its read. A
// write inside a host's transaction (ResolveFindingIn) counts when it is made, before that
// transaction commits; the repair dispatcher's observer covers its own commits.
func (s *Store[L]) Writes() uint64 { return writes.Load() }
