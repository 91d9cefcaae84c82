package main

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/reconcilekit/reconcile/internal/pgtest"
)

// statementLog is a TCP proxy in front of PostgreSQL that records the text of every statement
// a client sends: simple queries ('Q') and the statements it prepares ('P'), as the frontend
// protocol carries them (https://www.postgresql.org/docs/current/protocol-message-formats.html).
type statementLog struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	stmts  []string
}

func newStatementLog(t *testing.T, target string) *statementLog {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := &statementLog{ln: ln, target: target}
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() { l.serve(c) })
		}
	})
	return l
}

func (l *statementLog) serve(client net.Conn) {
	defer client.Close()
	server, err := net.Dial("tcp", l.target)
	if err != nil {
		return
	}
	defer server.Close()
	go func() {
		_, _ = io.Copy(client, server)
		client.Close()
	}()
	// The startup phase: untyped messages (length, then code); SSL and GSS encryption requests
	// come before the startup message proper.
	for {
		msg, err := readN(client, 4)
		if err != nil {
			return
		}
		body, err := readN(client, int(binary.BigEndian.Uint32(msg))-4)
		if err != nil {
			return
		}
		if _, err := server.Write(append(msg, body...)); err != nil {
			return
		}
		if code := binary.BigEndian.Uint32(body); code != 80877103 && code != 80877104 {
			break
		}
	}
	for {
		head, err := readN(client, 5)
		if err != nil {
			return
		}
		body, err := readN(client, int(binary.BigEndian.Uint32(head[1:]))-4)
		if err != nil {
			return
		}
		switch head[0] {
		case 'Q':
			l.record(strings.TrimSuffix(string(body), "\x00"))
		case 'P':
			if _, rest, ok := strings.Cut(string(body), "\x00"); ok {
				q, _, _ := strings.Cut(rest, "\x00")
				l.record(q)
			}
		}
		if _, err := server.Write(append(head, body...)); err != nil {
			return
		}
	}
}

func readN(r io.Reader, n int) ([]byte, error) {
	if n < 0 || n > 1<<30 {
		return nil, errors.New("bad length")
	}
	b := make([]byte, n)
	_, err := io.ReadFull(r, b)
	return b, err
}

func (l *statementLog) record(q string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.stmts = append(l.stmts, q)
}

func (l *statementLog) statements() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.stmts...)
}

// through is dbURL going through the proxy.
func (l *statementLog) through(t *testing.T, dbURL string) string {
	t.Helper()
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	u.Host = l.ln.Addr().String()
	return u.String()
}

// readOnlyStatement matches a statement that reads: a SELECT, or nothing but a comment (pgx's
// ping). Nothing may follow it (a second statement after a semicolon).
var readOnlyStatement = regexp.MustCompile(`(?is)^\s*(--[^\n]*\n?\s*)*(SELECT\b[^;]*;?\s*)?$`)

// writeWords are what a SELECT can still write or lock with.
var writeWords = regexp.MustCompile(`(?i)\b(FOR\s+(UPDATE|SHARE|NO\s+KEY|KEY)|pg_advisory\w*|set_config|nextval|setval|INTO|pg_notify|lo_\w+|dblink\w*)\b`)

// TestAuditSendsOnlyReads records every statement the audit sends PostgreSQL, for each object
// and with --money, through a proxy in front of the server: each is a SELECT (or pgx's ping)
// that neither writes nor locks: no DDL, no SET, no advisory lock, no temporary table, no
// transaction control, no migration check of the reconciler's tables.
func TestAuditSendsOnlyReads(t *testing.T) {
	f := newAuditFixture(t)
	f.plantStatusDrift()
	u, err := url.Parse(pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	proxy := newStatementLog(t, u.Host)
	f.url = proxy.through(t, pgtest.SelectOnlyURL(t, f.schema, "payments"))
	for _, args := range [][]string{
		nil,
		{"--json"},
		{"--money", "--amount-refunded-column", "refunded", "--dispute-status-column", "dispute"},
		{"--key-columns", "created_at,id"},
	} {
		code, out, errs := f.audit(context.Background(), args...)
		if code != exitNegative {
			t.Fatalf("%v: exit %d, want 1\n%s\n%s", args, code, out, errs)
		}
	}
	stmts := proxy.statements()
	if len(stmts) < 8 {
		t.Fatalf("only %d statements recorded: %q", len(stmts), stmts)
	}
	for _, s := range stmts {
		if !readOnlyStatement.MatchString(s) || writeWords.MatchString(s) {
			t.Errorf("the audit sent a statement that is not a plain read:\n%s", s)
		}
		if strings.Contains(s, "reconcile_") {
			t.Errorf("the audit touched the reconciler's tables:\n%s", s)
		}
	}
	if w := f.writes(); len(w) > 0 {
		t.Errorf("the audit wrote to Stripe: %v", w)
	}
	t.Logf("%d statements, all reads", len(stmts))
}
