// Package pgcontainer is the examples' fallback when no PostgreSQL answers: a container started
// with testcontainers. It lives in the examples module, not beside internal/shared/pgenv, so that
// testcontainers (and Docker's client, OpenTelemetry and the rest it brings) never reaches the
// go.sum of a service that imports the library.
package pgcontainer

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/testcontainers/testcontainers-go/modules/postgres"

	"github.com/reconcilekit/reconcile/internal/shared/pgenv"
)

// ContainerImage is the PostgreSQL image StartContainer runs.
const ContainerImage = "postgres:16-alpine"

const (
	pingTimeout      = 5 * time.Second
	dockerTimeout    = 5 * time.Second
	containerTimeout = 3 * time.Minute
)

// DockerUsable reports, as nil, whether `docker info` succeeds within five seconds; otherwise
// why not.
func DockerUsable() error {
	ctx, cancel := context.WithTimeout(context.Background(), dockerTimeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, "docker", "info").CombinedOutput()
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("'docker info' did not finish within %v", dockerTimeout)
		}
		msg := strings.TrimSpace(string(out))
		if i := strings.LastIndexByte(msg, '\n'); i >= 0 {
			msg = msg[i+1:] // the last line is usually the reason
		}
		if msg != "" {
			return fmt.Errorf("'docker info' failed: %w: %s", err, msg)
		}
		return fmt.Errorf("'docker info' failed: %w", err)
	}
	return nil
}

// StartContainer starts a PostgreSQL container with testcontainers (database test, user
// postgres) and returns its URL and a function that removes it. Should the process die first,
// testcontainers' reaper removes it.
func StartContainer(ctx context.Context) (dbURL string, terminate func(context.Context) error, err error) {
	ctx, cancel := context.WithTimeout(ctx, containerTimeout)
	defer cancel()
	ctr, err := postgres.Run(ctx, ContainerImage,
		postgres.WithDatabase("test"),
		postgres.WithUsername("postgres"),
		postgres.WithPassword("postgres"),
		postgres.BasicWaitStrategies(),
	)
	if err != nil {
		if ctr != nil {
			err = errors.Join(err, ctr.Terminate(context.Background()))
		}
		return "", nil, err
	}
	terminate = func(ctx context.Context) error { return ctr.Terminate(ctx) }
	if dbURL, err = ctr.ConnectionString(ctx, "sslmode=disable"); err != nil {
		return "", nil, errors.Join(err, terminate(context.Background()))
	}
	pingCtx, cancelPing := context.WithTimeout(ctx, pingTimeout)
	defer cancelPing()
	conn, err := pgx.Connect(pingCtx, dbURL)
	if err == nil {
		err = conn.Ping(pingCtx)
		conn.Close(context.WithoutCancel(pingCtx))
	}
	if err != nil {
		return "", nil, errors.Join(fmt.Errorf("ping the container: %w", err), terminate(context.Background()))
	}
	return dbURL, terminate, nil
}

// ConnectOrStart is pgenv.Connect, and when nothing was configured (source is
// pgenv.DefaultSource, as pgenv.URL says) and no server answers at the default URL at all (the
// connection is refused or does not get through; a server that refuses the login is an error,
// not a reason to start another), on a machine with Docker, it starts a PostgreSQL container
// instead and says so on w. stop removes the container (a no-op when none was started).
func ConnectOrStart(ctx context.Context, dbURL, source string, w interface{ Write([]byte) (int, error) }) (pool *pgxpool.Pool, stop func(), err error) {
	return ConnectOrStartWith(ctx, dbURL, source, w, DockerUsable)
}

// ConnectOrStartWith is ConnectOrStart with docker in place of DockerUsable, so that a test can
// say there is no Docker on a machine that has it.
func ConnectOrStartWith(ctx context.Context, dbURL, source string, w interface{ Write([]byte) (int, error) }, docker func() error) (pool *pgxpool.Pool, stop func(), err error) {
	stop = func() {}
	pool, err = pgenv.Connect(ctx, dbURL, source)
	var dial *net.OpError
	if err == nil || ctx.Err() != nil || source != pgenv.DefaultSource || !errors.As(err, &dial) {
		return pool, stop, err
	}
	if derr := docker(); derr != nil {
		return nil, stop, fmt.Errorf("%w\n  - or install Docker: with no database configured and none at the default URL, a container is started (here: %v)", err, derr)
	}
	fmt.Fprintf(w, "No PostgreSQL at %s and no DATABASE_URL set: starting a %s container with testcontainers.\n", pgenv.DefaultURL, ContainerImage)
	ctrURL, terminate, serr := StartContainer(ctx)
	if serr != nil {
		return nil, stop, fmt.Errorf("%w\n  and starting a %s container failed: %v", err, ContainerImage, serr)
	}
	stop = func() {
		if err := terminate(context.Background()); err != nil {
			fmt.Fprintf(w, "removing the PostgreSQL container: %v\n", err)
		}
	}
	if pool, err = pgenv.Connect(ctx, ctrURL, "the container"); err != nil {
		stop()
		return nil, func() {}, err
	}
	fmt.Fprintf(w, "Using the PostgreSQL container at %s; it is removed when the run ends.\n", pgenv.Redact(ctrURL))
	return pool, stop, nil
}
