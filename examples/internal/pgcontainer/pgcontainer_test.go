package pgcontainer_test

import (
	"bytes"
	"context"
	"errors"
	"net"
	"strings"
	"testing"

	"github.com/reconcilekit/reconcile/examples/internal/pgcontainer"
	"github.com/reconcilekit/reconcile/internal/shared/pgenv"
)

// A configured URL that does not answer is an error naming it: no container is started for a
// database someone asked for by name.
func TestConnectOrStartDoesNotReplaceAConfiguredDatabase(t *testing.T) {
	var out bytes.Buffer
	pool, stop, err := pgcontainer.ConnectOrStart(context.Background(), "postgres://nobody@127.0.0.1:1/none?sslmode=disable&connect_timeout=2", "$DATABASE_URL", &out)
	defer stop()
	if err == nil {
		pool.Close()
		t.Fatal("ConnectOrStart to a closed port succeeded")
	}
	if !strings.Contains(err.Error(), "$DATABASE_URL") || strings.Contains(out.String(), "container") {
		t.Errorf("error %q, output %q: want the configured URL's source named and no container started", err, out.String())
	}
}

// The default database answers on this project's machines: ConnectOrStart uses it as is.
func TestConnectOrStartUsesTheDefaultServer(t *testing.T) {
	var out bytes.Buffer
	pool, stop, err := pgcontainer.ConnectOrStart(context.Background(), pgenv.DefaultURL, pgenv.DefaultSource, &out)
	if err != nil {
		t.Fatalf("the default server does not answer (start it: pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main start): %v", err)
	}
	defer stop()
	defer pool.Close()
	if out.Len() != 0 {
		t.Errorf("ConnectOrStart printed %q with a server at the default URL", out.String())
	}
}

// A server that answers but refuses us is the error to report, not a reason to start another.
func TestConnectOrStartReportsARefusingServer(t *testing.T) {
	var out bytes.Buffer
	url := "postgres://no_such_role_here@127.0.0.1:5432/test?sslmode=disable&connect_timeout=5"
	pool, stop, err := pgcontainer.ConnectOrStart(context.Background(), url, pgenv.DefaultSource, &out)
	defer stop()
	if err == nil {
		pool.Close()
		t.Fatal("ConnectOrStart as a role that does not exist succeeded")
	}
	if !strings.Contains(err.Error(), "no_such_role_here") || strings.Contains(out.String(), "container") {
		t.Errorf("error %q, output %q: want the server's refusal and no container", err, out.String())
	}
}

// With nothing configured and no server at the URL, a machine without Docker gets the
// connection's error and why no container was started, wrapping the dial error (which
// examples/payments goes by to run in memory instead).
func TestConnectOrStartWithoutDockerSaysWhy(t *testing.T) {
	var out bytes.Buffer
	noDocker := func() error { return errors.New("no Docker in this test") }
	pool, stop, err := pgcontainer.ConnectOrStartWith(context.Background(), "postgres://postgres@127.0.0.1:1/test?sslmode=disable",
		pgenv.DefaultSource, &out, noDocker)
	defer stop()
	if err == nil {
		pool.Close()
		t.Fatal("ConnectOrStartWith to a closed port succeeded")
	}
	var dial *net.OpError
	if !strings.Contains(err.Error(), "or install Docker") || !strings.Contains(err.Error(), "no Docker in this test") || !errors.As(err, &dial) {
		t.Errorf("error %q: want why no container was started, wrapping the dial error", err)
	}
	if out.Len() != 0 {
		t.Errorf("ConnectOrStartWith printed %q without starting anything", out.String())
	}
}
