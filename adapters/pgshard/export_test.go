package pgshard

// Test hooks for the external tests of shard leases.

// StopRenewing stops l's renewer without releasing the lease, as if its worker had stalled:
// the lease then runs out unless renewed by hand (RenewOnce).
func StopRenewing(l *Lease[string]) {
	l.stopOnce.Do(func() { close(l.stop) })
	<-l.renewed
}

// RenewOnce renews l once, as its renewer would, and reports whether it still holds.
func RenewOnce(l *Lease[string]) bool { return l.renewOnce() }
