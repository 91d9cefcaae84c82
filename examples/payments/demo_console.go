package main

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"regexp"
	"strings"
	"syscall"
	"time"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripepolicy"
	"github.com/reconcilekit/reconcile/console"
)

// With -console ADDR (such as :8080 or 127.0.0.1:8080), the run ends by serving the review
// console (package console) over its tables on ADDR, until SIGINT or SIGTERM:
//
//	CONSOLE_TOKEN=s3cret go run ./examples/payments -console :8080
//
// then open http://127.0.0.1:8080/ and sign in with your name and the token as the password,
// or: curl -H "Authorization: Bearer s3cret" http://127.0.0.1:8080/findings. Without
// CONSOLE_TOKEN a random token is made and printed to standard error (only: standard output
// is often kept in logs).
//
// The console is served within the run, once its checks pass, over the run's database and
// its Stripe (stripetest's, still up, or real Stripe's): it resolves findings through the
// host's reviewer (reviewer.go), which reads a dispute at Stripe when a person decides one.
//
// The console speaks plain HTTP, so a port alone (":8080") listens on 127.0.0.1 only. A host
// given explicitly is used as it is; one that is not a loopback address gets a warning on
// standard error, since the token and the findings then cross the network unencrypted.
//
// The token is the demo's whole authentication: anyone who has it may review. The basic-auth
// user name, which the console records as the actor of every resolution and reopening, is
// self-asserted: it is checked for its form only, and anyone with the token may sign in as
// anyone. A host plugs in its own authentication (sessions, single sign-on, an
// authenticating proxy) through console.Config.Authenticate.

// consoleRealm is the basic-auth realm the browser shows when it asks for the token.
const consoleRealm = `Basic realm="reconcile review console (password: the console token)", charset="UTF-8"`

// shutdownGrace is how long requests in flight may take to finish when the console stops.
const shutdownGrace = 10 * time.Second

// serveConsole serves the console on addr over the run's findings, resolving them through rv,
// until ctx is done or the process gets SIGINT or SIGTERM, then shuts down gracefully. An
// empty addr does nothing. A generated token and warnings go to the process's standard error.
func serveConsole(ctx context.Context, out io.Writer, addr string, rv *reviewer) error {
	return serveConsoleTo(ctx, out, os.Stderr, addr, rv)
}

// serveConsoleTo is serveConsole writing where the console is to out, and a generated token
// and warnings to errOut only.
func serveConsoleTo(ctx context.Context, out, errOut io.Writer, addr string, rv *reviewer) error {
	if addr == "" {
		return nil
	}
	listen, warning, err := consoleListenAddr(addr)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()

	token, generated := os.Getenv("CONSOLE_TOKEN"), false
	if token == "" {
		if token, err = randomToken(); err != nil {
			return err
		}
		generated = true
	}
	h, err := newConsole(rv, token, slog.New(slog.NewTextHandler(out, &slog.HandlerOptions{Level: slog.LevelWarn})))
	if err != nil {
		return err
	}

	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return fmt.Errorf("payments: -console %s: %w", addr, err)
	}
	if warning != "" {
		fmt.Fprintln(errOut, warning)
	}
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       time.Minute,
		WriteTimeout:      time.Minute,
		IdleTimeout:       2 * time.Minute,
		BaseContext:       func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()

	url := consoleURL(ln.Addr())
	fmt.Fprintf(out, "\nReview console at %s (job %s, schema %s)\n", url, job, rv.Config().Schema)
	fmt.Fprintf(out, "  sign in with your name and the console token as the password (the name is recorded\n")
	fmt.Fprintf(out, "  as the reviewer but not verified: anyone with the token may use any name),\n")
	shown := "$CONSOLE_TOKEN"
	if generated {
		// The token goes to standard error only: standard output is often kept in logs.
		fmt.Fprintf(errOut, "CONSOLE_TOKEN is not set; this run's console token is %s\n", token)
		fmt.Fprintf(out, "  CONSOLE_TOKEN is not set; this run's token is printed on standard error,\n")
		shown = "<token>"
	}
	fmt.Fprintf(out, "  or: curl -H \"Authorization: Bearer %s\" %sfindings\n", shown, url)
	fmt.Fprintf(out, "Press Ctrl-C to stop.\n")

	select {
	case err := <-served:
		return fmt.Errorf("payments: console: %w", err)
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		return fmt.Errorf("payments: console: shut down: %w", err)
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("payments: console: %w", err)
	}
	fmt.Fprintln(out, "Review console stopped.")
	return nil
}

// newConsole returns the console over the example's findings, for people holding token: store
// lists, resolves and reopens them (the host's reviewer, or the store itself) and reads the
// job's status, through the process's Monitor (newMonitor).
func newConsole(store interface {
	reconcile.Reviewer
	reconcile.StatusReader
}, token string, logger *slog.Logger) (http.Handler, error) {
	if token == "" {
		return nil, errors.New("payments: console: the token is empty")
	}
	monitor, err := newMonitor(store, logger)
	if err != nil {
		return nil, err
	}
	return console.New(console.Config{
		Store:        store,
		Monitor:      monitor, // the job, judged by healthPolicy as the report judges it
		Authenticate: tokenAuth(token),
		Challenge:    consoleRealm,
		// The PaymentIntents are stripetest's, so test mode; they will not be found there.
		ExternalURL: console.StripeDashboardURL(true),
		// What each of the policy's kinds means, and which need a note to resolve.
		Kinds:  stripepolicy.Kinds(),
		Logger: logger,
	})
}

// reviewerName is what a reviewer may call themselves: it is recorded in the audit history.
// It is a form, not an identity: the demo cannot check who is behind a name.
var reviewerName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$`)

// tokenAuth accepts requests carrying token: as the password of basic auth, whose user name
// becomes the actor, or as a bearer token, for the actor "operator". The user name is
// self-asserted: anyone holding the token may sign in under any name, so in this demo the
// actor in the audit history is only as true as the people sharing the token.
func tokenAuth(token string) func(*http.Request) (string, error) {
	want := sha256.Sum256([]byte(token))
	matches := func(got string) bool {
		// Hashes have one length, so the comparison's time says nothing about the token's.
		sum := sha256.Sum256([]byte(got))
		return subtle.ConstantTimeCompare(sum[:], want[:]) == 1
	}
	return func(r *http.Request) (string, error) {
		if user, pass, ok := r.BasicAuth(); ok {
			if !matches(pass) {
				return "", errors.New("wrong console token")
			}
			if !reviewerName.MatchString(user) {
				return "", errors.New("the user name must be 1 to 64 letters, digits, dots, dashes, underscores or @")
			}
			return user, nil
		}
		if bearer, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
			if !matches(bearer) {
				return "", errors.New("wrong console token")
			}
			return "operator", nil
		}
		return "", errors.New("no credentials")
	}
}

// randomToken makes a console token: 128 random bits, in hex.
func randomToken() (string, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("payments: console token: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// consoleListenAddr returns the address -console ADDR listens on: a port alone (":8080") on
// 127.0.0.1 only, since the console speaks plain HTTP; an explicit host as it is. warning is
// set when that host is not a loopback one.
func consoleListenAddr(addr string) (listen, warning string, err error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", "", fmt.Errorf("payments: -console %q: want host:port or :port, such as 127.0.0.1:8080: %w", addr, err)
	}
	if host == "" {
		return net.JoinHostPort("127.0.0.1", port), "", nil
	}
	if ip := net.ParseIP(host); host == "localhost" || (ip != nil && ip.IsLoopback()) {
		return addr, "", nil
	}
	return addr, fmt.Sprintf("payments: warning: -console %s serves plain HTTP beyond this machine: the console token, "+
		"the reviewers' names and the findings cross the network unencrypted. Prefer 127.0.0.1 "+
		"(reached through an SSH tunnel) or a TLS-terminating proxy in front.", addr), nil
}

// consoleURL is the console's address for people: an unspecified host (":8080") as localhost.
func consoleURL(a net.Addr) string {
	host, port, err := net.SplitHostPort(a.String())
	if err != nil {
		return "http://" + a.String() + "/"
	}
	if ip := net.ParseIP(host); ip == nil || ip.IsUnspecified() {
		host = "localhost"
	}
	return "http://" + net.JoinHostPort(host, port) + "/"
}
