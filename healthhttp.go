package reconcile

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/reconcilekit/reconcile/internal/shared/redact"
	"github.com/reconcilekit/reconcile/internal/shared/safetext"
)

// HealthJob is one job a HealthHandler reports.
type HealthJob struct {
	// Name is the job's name, as its StatusReader knows it (Config.Job). Required.
	Name string
	// Status reads the job's Status: its store (pgstore.Store, memstore.Store) or a sharded
	// job. Required unless Judge is set.
	Status StatusReader
	// Judge, instead of Status, judges a job that is several: a FanOut's Health, whose checks
	// name the account that lags. It is given Policy and the handler's Timeout. Its checks'
	// reasons are shown as it writes them (keys redacted): like FanOut.Health's, they must not
	// carry an error's text.
	Judge func(ctx context.Context, p HealthPolicy) Health
	// Policy is what healthy means for the job; the zero value is the defaults.
	Policy HealthPolicy
}

// HealthHandlerConfig configures a HealthHandler.
type HealthHandlerConfig struct {
	// Jobs are the jobs reported, in this order. At least one; names unique.
	Jobs []HealthJob
	// Timeout bounds a request's wait for the statuses: a job whose status is not read in time
	// is reported unknown, and the answer is 503. It bounds each read too, through its
	// context. Zero means 5 seconds.
	Timeout time.Duration
	// Logger receives a line, with the error, for every status that could not be read; the
	// answer itself only says that it could not. Nil means no logging.
	Logger *slog.Logger
}

// DefaultHealthTimeout is HealthHandlerConfig.Timeout's default.
const DefaultHealthTimeout = 5 * time.Second

// HealthHandler serves the health of one or several jobs over HTTP: 200 when every job is
// healthy, 503 when one is not or its status could not be read. GET and HEAD only.
//
// The body is JSON by default and for "Accept: application/json": {"ok": ..., "jobs": [...]},
// each job a Health in its JSON form (see Status), or {"job", "ok": false, "error"} when its
// status could not be read. A person gets readable text with "Accept: text/plain" or
// "?format=text": a line per job, then its checks.
//
// Health endpoints usually have no sign-in, so the answer holds no failure's text, which may
// hold SQL, a database's name or a credential: a failed batch or lane step is shown as its
// FailureReason ("database error", "rate limited", ...), in the status and in the reasons,
// and a status that cannot be read only as "status unavailable", its error logged. What else
// the store recorded (figures, finding kinds, lane names) is shown with anything that looks
// like a Stripe key redacted, and in the text form with control characters escaped, so that
// no stored value can forge a line; nothing of the configuration is shown.
//
// Each request waits for every job's status. Requests that come while a job's status is being
// read share that read rather than start their own, so a burst of probes costs one read per
// job, and a reader that hangs holds one goroutine per job, not one per probe; each request
// still answers within Timeout. Probe it every few seconds at most: pgstore's Status reads the
// sweep's lag marks (about 20 ms at 10 million rows), but scans the host table (about 2 s per
// million rows) for a tier with a Filter, ObserveInHostColumns or a sharded job, and until a
// job completes its first cycle with marks (pgstore's Store.Status says why).
//
// # Readiness, liveness and alerting
//
// Health fails when the reconciliation lag exceeds its SLO, when Stripe is down or refuses the
// key, when findings go stale: none of which a restart fixes. Do not use it as a liveness
// probe: a restart only starts the work over, and a host that also serves customers would be
// taken down with it. Alert on it (a failing answer for some minutes pages the owner, with the
// reasons in the body), and use it as the readiness probe only of a deployment that runs
// nothing but the reconciler, never of the host's own HTTP service, which must keep serving
// while reconciliation lags. A liveness probe, if any, should check only that the process
// answers.
type HealthHandler struct {
	jobs    []HealthJob
	timeout time.Duration
	logger  *slog.Logger
	reads   singleflight.Group // by job name: the read in flight, which requests share
}

// NewHealthHandler checks cfg and returns a HealthHandler.
func NewHealthHandler(cfg HealthHandlerConfig) (*HealthHandler, error) {
	if len(cfg.Jobs) == 0 {
		return nil, errors.New("reconcile: health handler: no jobs")
	}
	names := map[string]bool{}
	for i, j := range cfg.Jobs {
		switch {
		case j.Name == "":
			return nil, fmt.Errorf("reconcile: health handler: job %d has no Name", i)
		case names[j.Name]:
			return nil, fmt.Errorf("reconcile: health handler: job %q appears twice", j.Name)
		case (j.Status == nil || isNilPointer(j.Status)) == (j.Judge == nil):
			return nil, fmt.Errorf("reconcile: health handler: job %q needs exactly one of Status and Judge", j.Name)
		}
		names[j.Name] = true
	}
	if cfg.Timeout < 0 {
		return nil, fmt.Errorf("reconcile: health handler: negative Timeout %v", cfg.Timeout)
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultHealthTimeout
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &HealthHandler{jobs: slices.Clone(cfg.Jobs), timeout: cfg.Timeout, logger: cfg.Logger}, nil
}

// healthBody is the JSON answer.
type healthBody struct {
	OK   bool        `json:"ok"`
	Jobs []jobHealth `json:"jobs"`
}

// jobHealth is one job's health, or why it is unknown.
type jobHealth struct {
	Health
	err string
}

// errStatusUnavailable is all an answer says of a status that could not be read.
const errStatusUnavailable = "status unavailable"

func (j jobHealth) MarshalJSON() ([]byte, error) {
	if j.err != "" {
		return json.Marshal(struct {
			Job   string `json:"job"`
			OK    bool   `json:"ok"`
			Error string `json:"error"`
		}{j.Job, false, j.err})
	}
	return json.Marshal(j.Health)
}

// ServeHTTP answers with the jobs' health; see HealthHandler.
func (h *HealthHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed: the health endpoint is read-only (GET, HEAD)", http.StatusMethodNotAllowed)
		return
	}
	text, err := wantsText(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	body := h.read(r.Context())
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	if text {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	} else {
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
	}
	code := http.StatusOK
	if !body.OK {
		code = http.StatusServiceUnavailable
	}
	w.WriteHeader(code)
	if r.Method == http.MethodHead {
		return
	}
	if text {
		writeHealthText(w, body)
		return
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(body) // the client went away, or the types cannot fail to encode
}

// read reads and judges every job's status, concurrently and within the timeout.
func (h *HealthHandler) read(ctx context.Context) healthBody {
	ctx, cancel := context.WithTimeout(ctx, h.timeout)
	defer cancel()
	results := make([]<-chan singleflight.Result, len(h.jobs))
	for i := range h.jobs {
		results[i] = h.readJob(ctx, i)
	}
	body := healthBody{OK: true, Jobs: make([]jobHealth, len(h.jobs))}
	for i, j := range h.jobs {
		var res singleflight.Result
		select {
		case res = <-results[i]:
		case <-ctx.Done():
			select { // a status read in time counts, even if the wait for another ran out
			case res = <-results[i]:
			default:
				h.logger.LogAttrs(ctx, slog.LevelError, "reconcile health: could not read a job's status",
					slog.String("job", j.Name), slog.String("error", fmt.Sprintf("not read within %v, or the client went away", h.timeout)))
				res.Err = ctx.Err()
			}
		}
		if res.Err != nil {
			body.Jobs[i] = jobHealth{Health: Health{Job: j.Name}, err: errStatusUnavailable}
			body.OK = false
			continue
		}
		var hl Health
		if r := res.Val.(jobRead); r.hl != nil {
			hl = *r.hl
			hl.Status = showable(hl.Status)
			hl.Checks = slices.Clone(hl.Checks)
			for k := range hl.Checks {
				hl.Checks[k].Name, hl.Checks[k].Reason = redactKeys(hl.Checks[k].Name), redactKeys(hl.Checks[k].Reason)
			}
		} else {
			hl = EvaluateHealth(showable(r.st), j.Policy)
		}
		hl.Job = j.Name
		body.Jobs[i] = jobHealth{Health: hl}
		body.OK = body.OK && hl.OK
	}
	return body
}

// jobRead is what a job's read returns: its status, or its Judge's health.
type jobRead struct {
	st Status
	hl *Health
}

// readJob starts reading job i's status, or joins the read of it in flight, and returns where
// the result will be sent. The read does not end with the request that started it, which
// others may be waiting on too: it has the timeout of its own.
func (h *HealthHandler) readJob(ctx context.Context, i int) <-chan singleflight.Result {
	j := h.jobs[i]
	return h.reads.DoChan(j.Name, func() (_ any, err error) {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), h.timeout)
		defer cancel()
		defer func() {
			if p := recover(); p != nil { // singleflight would re-panic it in a goroutine of its own
				err = fmt.Errorf("the status reader panicked: %v", p)
			}
			if err != nil {
				h.logger.LogAttrs(ctx, slog.LevelError, "reconcile health: could not read a job's status",
					slog.String("job", j.Name), slog.String("error", err.Error()))
			}
		}()
		if j.Judge != nil {
			hl := j.Judge(ctx, j.Policy)
			return jobRead{hl: &hl}, nil
		}
		st, err := j.Status.Status(ctx, j.Name)
		return jobRead{st: st}, err
	})
}

// wantsText reports whether the request asks for text rather than JSON: ?format=text or
// ?format=json decide; else the Accept header, JSON when it does not prefer text/plain.
func wantsText(r *http.Request) (bool, error) {
	switch f := r.URL.Query().Get("format"); f {
	case "text":
		return true, nil
	case "json":
		return false, nil
	case "":
	default:
		return false, fmt.Errorf("unknown format %q: use json or text", f)
	}
	qJSON, qText := acceptQuality(r.Header.Values("Accept"), "application", "json"), acceptQuality(r.Header.Values("Accept"), "text", "plain")
	return qText > qJSON, nil
}

// acceptQuality is the quality the Accept header gives type/sub: that of the most specific
// range that matches it (type/sub, type/*, */*), 0 if none does.
func acceptQuality(accept []string, typ, sub string) float64 {
	best, q := -1, 0.0
	for _, line := range accept {
		for _, part := range strings.Split(line, ",") {
			mt, params, err := mime.ParseMediaType(strings.TrimSpace(part))
			if err != nil {
				continue
			}
			t, s, _ := strings.Cut(mt, "/")
			specificity := -1
			switch {
			case t == typ && s == sub:
				specificity = 2
			case t == typ && s == "*":
				specificity = 1
			case t == "*" && s == "*":
				specificity = 0
			}
			if specificity <= best {
				continue
			}
			best, q = specificity, 1
			if v, ok := params["q"]; ok {
				if f, err := strconv.ParseFloat(v, 64); err == nil && f >= 0 && f <= 1 {
					q = f
				}
			}
		}
	}
	return q
}

// writeHealthText writes the answer for a person: a summary, then for each job a line, its
// checks, the reasons of those that fail, and its open findings. Every value is escaped
// (safetext.Line), so that each line is the handler's own.
func writeHealthText(w io.Writer, body healthBody) {
	x := safetext.Line
	failing := 0
	for _, j := range body.Jobs {
		if !j.OK {
			failing++
		}
	}
	if body.OK {
		fmt.Fprintf(w, "OK: %d of %d jobs healthy\n", len(body.Jobs), len(body.Jobs))
	} else {
		fmt.Fprintf(w, "FAILING: %d of %d jobs not healthy\n", failing, len(body.Jobs))
	}
	for _, j := range body.Jobs {
		fmt.Fprintln(w)
		if j.err != "" {
			fmt.Fprintf(w, "%s: UNKNOWN: %s\n", x(j.Job), j.err)
			continue
		}
		reasons := j.Reasons()
		if j.OK {
			fmt.Fprintln(w, x(j.Health.String()))
		} else {
			fmt.Fprintf(w, "%s: FAILING (%d of %d checks)\n", x(j.Job), len(reasons), len(j.Checks))
		}
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		for _, c := range j.Checks {
			mark := "ok"
			if !c.OK {
				mark = "FAIL"
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\tlimit %s\n", mark, x(c.Name), x(c.Value), x(c.Limit))
		}
		_ = tw.Flush()
		for _, r := range reasons {
			fmt.Fprintf(w, "  - %s\n", x(r))
		}
		if len(j.Status.OpenFindings) > 0 {
			var kinds []string
			for _, k := range j.Status.OpenFindingKinds() {
				kinds = append(kinds, fmt.Sprintf("%s %d", x(k), j.Status.OpenFindings[k]))
			}
			fmt.Fprintf(w, "  open findings: %s\n", strings.Join(kinds, ", "))
		}
	}
}

// redactKeys replaces anything in s that looks like a Stripe key, as the console and the
// metrics do (redact.Keys).
func redactKeys(s string) string { return redact.Keys(s) }

// showable is st as an answer shows it, before it is judged, so that neither the status nor
// the reasons show what they must not: its failures replaced by their reasons
// (FailureReason), and its other texts (finding kinds, lane names and gaps) with anything that
// looks like a key redacted. Adapters keep keys out of what they store; a host's classifier
// may not (a kind made of an external state), and this is the endpoint's own guard.
func showable(st Status) Status {
	st = withFailureReasons(st)
	if len(st.OpenFindings) > 0 {
		kinds := make(map[string]int, len(st.OpenFindings))
		for k, n := range st.OpenFindings {
			kinds[redactKeys(k)] += n // two kinds may redact alike
		}
		st.OpenFindings = kinds
	}
	if len(st.Lanes) > 0 {
		lanes := make([]LaneStatus, len(st.Lanes))
		for i, l := range st.Lanes {
			l.Lane, l.GapReason = redactKeys(l.Lane), redactKeys(l.GapReason)
			lanes[i] = l
		}
		st.Lanes = lanes
	}
	return st
}
