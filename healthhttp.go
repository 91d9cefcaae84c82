package reconcile

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/reconcilekit/reconcile/internal/shared/safetext"
)

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
// Each request waits for the Monitor's reads of every job's status (Monitor.Health): requests
// that come while a job's status is being read share that read, and a read kept within the
// Monitor's TTL is used, so a burst of probes costs one read per job, and a reader that hangs
// holds one goroutine per job, not one per probe; each request still answers within the
// Monitor's Timeout. Give the console and the metrics the same Monitor: they then share its
// reads, and judge each job by the same policy.
// Probe it every few seconds at most: pgstore's Status reads the sweep's lag marks (about 20 ms
// at 10 million rows), but scans the host table (about 2 s per million rows) for a tier with a
// Filter, ObserveInHostColumns or a sharded job, and until a job completes its first cycle with
// marks (pgstore's Store.Status says why).
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
	monitor *Monitor
}

// NewHealthHandler returns a HealthHandler of m's jobs. m must be made by NewMonitor: a Monitor
// without jobs would be answered healthy.
func NewHealthHandler(m *Monitor) (*HealthHandler, error) {
	switch {
	case m == nil:
		return nil, errors.New("reconcile: health handler: the Monitor is nil")
	case len(m.jobs) == 0:
		return nil, errors.New("reconcile: health handler: the Monitor has no jobs (make it with NewMonitor)")
	}
	return &HealthHandler{monitor: m}, nil
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

// ServeHTTP answers with the jobs' health; see HealthHandler. A HealthHandler not made by
// NewHealthHandler answers 500.
func (h *HealthHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if h == nil || h.monitor == nil {
		http.Error(w, "health handler not configured", http.StatusInternalServerError)
		return
	}
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

// read reads and judges every job's status through the Monitor.
func (h *HealthHandler) read(ctx context.Context) healthBody {
	jobs := h.monitor.Health(ctx)
	body := healthBody{OK: true, Jobs: make([]jobHealth, len(jobs))}
	for i, j := range jobs {
		if j.Err != nil {
			body.Jobs[i] = jobHealth{Health: Health{Job: j.Job}, err: errStatusUnavailable}
			body.OK = false
			continue
		}
		body.Jobs[i] = jobHealth{Health: j.Health}
		body.OK = body.OK && j.Health.OK
	}
	return body
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
