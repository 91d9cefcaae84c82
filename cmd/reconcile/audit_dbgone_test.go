package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripetest"
	"github.com/reconcilekit/reconcile/internal/leaktest"
	"github.com/reconcilekit/reconcile/internal/pgtest"
)

// cutProxy is a TCP proxy in front of PostgreSQL that can be cut: the database going away.
type cutProxy struct {
	ln    net.Listener
	mu    sync.Mutex
	conns []net.Conn
	wg    sync.WaitGroup
}

func newCutProxy(t *testing.T, target string) *cutProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{ln: ln}
	p.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, s)
			p.mu.Unlock()
			p.wg.Go(func() { io.Copy(s, c); s.Close() })
			p.wg.Go(func() { io.Copy(c, s); c.Close() })
		}
	})
	t.Cleanup(func() { p.cut(); p.wg.Wait() })
	return p
}

// cut closes the listener and every connection through it.
func (p *cutProxy) cut() {
	p.ln.Close()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
}

// TestAuditDatabaseGoesAway: the database goes away after the first batch. The audit stops,
// says why once, prints the findings of the rows it read, exits 1 for them, and leaves no
// goroutine behind.
func TestAuditDatabaseGoesAway(t *testing.T) {
	for _, format := range []string{"text", "--json", "--csv"} {
		t.Run(format, func(t *testing.T) {
			f := newAuditFixture(t)
			for range 10 {
				f.add(row{local: "pending", amount: 1000, remote: "succeeded"})
			}
			u, err := url.Parse(pgtest.URL(t))
			if err != nil {
				t.Fatal(err)
			}
			p := newCutProxy(t, u.Host)
			through := *u
			through.Host = p.ln.Addr().String()
			f.url = through.String()
			// Each row is retrieved (the list is refused), a call at a time: batches take long
			// enough for the cut to fall between the first and the last.
			f.srv.SetLatency(30 * time.Millisecond)
			f.srv.Inject(stripetest.ListPaymentIntents, stripetest.Fault{Status: 400})
			opts := leaktest.IgnoreCurrent()
			done := make(chan struct{})
			var wg sync.WaitGroup
			wg.Go(func() {
				for len(f.srv.Log()) < 3 { // the list and the first batch's two rows
					select {
					case <-done:
						return
					case <-time.After(5 * time.Millisecond):
					}
				}
				p.cut()
			})
			args := []string{"--batch-size", "2"}
			if format != "text" {
				args = append(args, format)
			}
			code, out, errs := f.audit(context.Background(), args...)
			close(done)
			wg.Wait()
			if code != exitNegative {
				t.Fatalf("exit %d, want 1 (drift found before the failure)\n%s\n%s", code, out, errs)
			}
			if n := strings.Count(out, "missed_success"); n < 2 || n > 10 {
				t.Errorf("%d findings printed, want those of the rows read before the failure:\n%s", n, out)
			}
			const cause = `pgstore: read`
			if n := strings.Count(out+errs, cause); n != 1 {
				t.Errorf("the failure is said %d times, want once:\n%s\n%s", n, out, errs)
			}
			if strings.Contains(out+errs, ": complete") {
				t.Errorf("the audit says it completed:\n%s\n%s", out, errs)
			}
			// The Stripe client's idle keep-alive connections are the process's, not the audit's.
			http.DefaultTransport.(*http.Transport).CloseIdleConnections()
			leaktest.VerifyNone(t, opts)
		})
	}
}
