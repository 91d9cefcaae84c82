package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	prom "github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"

	"github.com/reconcilekit/reconcile/internal/shared/pgenv"
)

func main() {
	var o options
	flag.DurationVar(&o.duration, "duration", 12*time.Minute, "how long the world runs")
	flag.DurationVar(&o.scrape, "scrape", 5*time.Second, "Prometheus's scrape interval")
	flag.StringVar(&o.prometheus, "prometheus", "/usr/bin/prometheus", "the Prometheus binary")
	flag.StringVar(&o.chromium, "chromium", "/usr/bin/chromium", "the Chromium binary that takes the screenshot")
	flag.StringVar(&o.dashboard, "dashboard", "adapters/prommetrics/mixin/dashboard.json", "the dashboard whose queries are drawn")
	flag.StringVar(&o.out, "out", "tools/docs/grafana-dashboard.png", "the screenshot")
	flag.StringVar(&o.data, "data", "", "save the query results here; with -render, read them from here instead of running")
	flag.BoolVar(&o.render, "render", false, "only draw the results saved in -data")
	flag.Parse()
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, o, log); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

type options struct {
	duration, scrape                           time.Duration
	prometheus, chromium, dashboard, out, data string
	render                                     bool
}

// capture is what the run leaves for drawing: every panel query's result over the run.
type capture struct {
	Start, End time.Time
	Step       float64
	// Results by panel id, then by query refId.
	Results map[int]map[string][]series
}

func run(ctx context.Context, o options, log *slog.Logger) error {
	d, err := readDashboard(o.dashboard)
	if err != nil {
		return err
	}
	var c capture
	if o.render {
		src, err := os.ReadFile(o.data)
		if err != nil {
			return fmt.Errorf("dashshot: -render needs the -data of an earlier run: %w", err)
		}
		if err := json.Unmarshal(src, &c); err != nil {
			return err
		}
	} else {
		if c, err = record(ctx, o, d, log); err != nil {
			return err
		}
		if o.data != "" {
			src, err := json.Marshal(c)
			if err != nil {
				return err
			}
			if err := os.WriteFile(o.data, src, 0o644); err != nil {
				return err
			}
		}
	}
	page, height := render(d, c, o)
	return screenshot(context.WithoutCancel(ctx), o.chromium, page, o.out, height)
}

// record runs the world with Prometheus scraping it, then asks Prometheus every panel's queries.
func record(ctx context.Context, o options, d dashboard, log *slog.Logger) (capture, error) {
	dir, err := os.MkdirTemp("", "dashshot-")
	if err != nil {
		return capture{}, err
	}
	defer os.RemoveAll(dir)
	pool, drop, err := throwawaySchema(ctx)
	if err != nil {
		return capture{}, err
	}
	defer drop()

	w, err := newWorld(ctx, pool, o.duration, log)
	if err != nil {
		return capture{}, err
	}
	reg := prom.NewRegistry()
	if err := w.metrics.Register(reg); err != nil {
		return capture{}, err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return capture{}, err
	}
	srv := &http.Server{Handler: exposition(reg), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(l) }()
	defer srv.Close()

	// An interrupt ends the run early, and what was recorded is still drawn: Prometheus and
	// the queries outlive ctx.
	p, err := startPrometheus(context.WithoutCancel(ctx), o.prometheus, dir, l.Addr().String(), o.scrape)
	if err != nil {
		return capture{}, err
	}
	defer p.stop()

	fmt.Fprintf(os.Stderr, "dashshot: running the world for %s, Prometheus at http://%s\n", o.duration, p.addr)
	start := time.Now()
	runCtx, cancel := context.WithTimeout(ctx, o.duration)
	defer cancel()
	if err := w.run(runCtx); err != nil {
		return capture{}, err
	}
	time.Sleep(o.scrape + time.Second) // the last scrape
	end := time.Now()

	// Grafana's $__rate_interval at a fine resolution: four scrape intervals.
	rateInterval := (4 * o.scrape).String()
	step := o.scrape
	c := capture{Start: start, End: end, Step: step.Seconds(), Results: map[int]map[string][]series{}}
	for _, panel := range d.Panels {
		for _, t := range panel.Targets {
			expr := strings.NewReplacer(`"$job"`, `".*"`, "$__rate_interval", rateInterval).Replace(t.Expr)
			from := start
			if t.Instant { // the value at the end, as Grafana asks an instant query
				from = end
			}
			res, err := p.queryRange(context.WithoutCancel(ctx), expr, from, end, step)
			if err != nil {
				return capture{}, fmt.Errorf("dashshot: panel %q: %w", panel.Title, err)
			}
			if c.Results[panel.ID] == nil {
				c.Results[panel.ID] = map[string][]series{}
			}
			c.Results[panel.ID][t.RefID] = res
		}
	}
	return c, nil
}

// exposition serves g in the text format. (promhttp would do, but would add its compression
// library to this module's go.sum for one handler.)
func exposition(g prom.Gatherer) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mfs, err := g.Gather()
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		format := expfmt.NewFormat(expfmt.TypeTextPlain)
		w.Header().Set("Content-Type", string(format))
		enc := expfmt.NewEncoder(w, format)
		for _, mf := range mfs {
			if err := enc.Encode(mf); err != nil {
				return
			}
		}
	})
}

// throwawaySchema connects to the database (pgenv: $DATABASE_URL or the local server) with a
// schema of its own, and returns a function that drops it.
func throwawaySchema(ctx context.Context) (*pgxpool.Pool, func(), error) {
	dbURL, source := pgenv.URL("DATABASE_URL")
	admin, err := pgenv.Connect(ctx, dbURL, source)
	if err != nil {
		return nil, nil, err
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	schema := pgx.Identifier{"dashshot_" + hex.EncodeToString(b[:])}.Sanitize()
	if _, err := admin.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		admin.Close()
		return nil, nil, err
	}
	drop := func() {
		_, _ = admin.Exec(context.Background(), "DROP SCHEMA "+schema+" CASCADE")
		admin.Close()
	}
	cfg, err := pgxpool.ParseConfig(dbURL)
	if err != nil {
		drop()
		return nil, nil, err
	}
	cfg.ConnConfig.RuntimeParams["search_path"] = schema
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		drop()
		return nil, nil, err
	}
	return pool, func() { pool.Close(); drop() }, nil
}

// screenshot draws page with headless Chromium into out.
func screenshot(ctx context.Context, chromium, page, out string, height int) error {
	if _, err := exec.LookPath(chromium); err != nil {
		return fmt.Errorf("dashshot: no Chromium at %s (%w): apt-get install chromium, or -chromium PATH", chromium, err)
	}
	dir, err := os.MkdirTemp("", "dashshot-page-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	html := filepath.Join(dir, "dashboard.html")
	if err := os.WriteFile(html, []byte(page), 0o644); err != nil {
		return err
	}
	abs, err := filepath.Abs(out)
	if err != nil {
		return err
	}
	// The virtual time budget lets the page finish painting before the shot: without it a large
	// SVG came out cut short.
	cmd := exec.CommandContext(ctx, chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
		"--virtual-time-budget=10000",
		"--user-data-dir="+filepath.Join(dir, "profile"), "--screenshot="+abs,
		fmt.Sprintf("--window-size=%d,%d", pageWidth, height), "file://"+html)
	if outb, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("dashshot: chromium: %w\n%s", err, outb)
	}
	if _, err := os.Stat(abs); err != nil {
		return errors.New("dashshot: chromium wrote no screenshot")
	}
	return nil
}
