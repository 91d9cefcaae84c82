// Package drain is the second half of stopping background work gracefully: after the work was
// asked to stop, wait for it, and cancel it when the caller runs out of patience.
//
// # Usage
//
// The reconcile.Runner and pgoutbox's Dispatcher stop the same way: Stop first tells the loops
// to take no new work (a batch, a claim), then calls Wait with the caller's context, the
// WaitGroup of the loops, and kill, the cancel function of the context their work runs under:
//
//	stop() // cancel the context the loops check between batches: no new work
//	if !drain.Wait(ctx, &wg, kill, errStopped) {
//		// cut short: the running work was cancelled with errStopped
//	}
//
// Work in progress finishes if it can before ctx ends. If ctx ends first, Wait cancels the
// work with the given cause and waits at most Grace more, so that Stop returns even when a
// gateway or handler ignores its context.
package drain
