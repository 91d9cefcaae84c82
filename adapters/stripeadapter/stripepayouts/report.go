package stripepayouts

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/stripe/stripe-go/v82"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripepolicy"
	"github.com/reconcilekit/reconcile/tieout"
)

// ReportType is the report a ReportLister runs: Stripe's itemized payout reconciliation, one
// row per balance transaction paid out in an automatic payout, the payouts chosen by their
// effective time (arrival_date).
const ReportType = "payout_reconciliation.itemized.5"

// Defaults of ReportOptions.
const (
	DefaultReportPoll     = 2 * time.Second
	DefaultReportWait     = 2 * time.Minute
	DefaultReportMaxBytes = 64 << 20
)

// maxReportPoll caps the wait between two retrieves of a run.
const maxReportPoll = 30 * time.Second

// ReportOptions configures a ReportLister. Its zero value is the defaults.
type ReportOptions struct {
	// PollInterval is the first wait between two retrieves of a report run; each wait
	// doubles, up to 30 seconds. Zero means DefaultReportPoll.
	PollInterval time.Duration
	// MaxWait bounds how long a run is waited for; a run not finished by then is left, and the
	// page's payouts are listed one by one. Zero means DefaultReportWait. A step whose context
	// has a deadline waits at most half the time left before it, and lists with the other half:
	// a step that is given less time than Stripe takes to run a report still ties its page out.
	MaxWait time.Duration
	// MaxBytes bounds the report file read; a larger one is left, and the page's payouts are
	// listed one by one. Zero means DefaultReportMaxBytes (64 MiB: about 300,000 lines).
	MaxBytes int64
	// Logger receives a warning each time a page's payouts, or one of them, are listed one
	// by one instead of from a report, saying why (at Info for a payout whose lines in the
	// report do not sum to it: that is how a drift of its sum costs). Nil means none.
	Logger *slog.Logger
}

// ReportLister is a Lister that itemizes a page of payouts with one report run (ReportType)
// instead of listing each payout's balance transactions, a hundred a call: a payout of 250
// lines costs three list calls, a page of ten such payouts a report's three calls (a run
// created, retrieved once it has finished, its file downloaded; more while it runs). Its
// Groups are the Lister's; for the page's automatic payouts that are paid and whose effective
// time is within the report's data (before the report type's data_available_end), it runs one
// report over their effective times, and Members serves each from the report's rows. A payout
// the report does not cover (failed, canceled, too recent, a manual one), one the report has
// no row for or whose rows do not sum to it, and every payout of a page whose report failed,
// did not finish within MaxWait,
// was larger than MaxBytes or did not read, is listed one by one as the Lister does: a missing
// report never makes a finding. It is safe for concurrent use; give each step its own.
type ReportLister struct {
	l      *Lister
	opt    ReportOptions
	logger *slog.Logger

	mu        sync.Mutex
	dataStart int64                      // the report type's data_available_start, as last read
	dataEnd   int64                      // its data_available_end, 0 before the first read
	members   map[string][]tieout.Member // by payout: the last page's payouts the report covers
	lastKey   string                     // the parameters of the last report run created, encoded
	lastRun   string                     // its id: a step redone with the same page waits for it
}

var _ tieout.Lister = (*ReportLister)(nil)

// WithReports returns the lister that itemizes pages of l's payouts through Stripe's Reporting
// API (see ReportLister). Reports are the platform's: Stripe runs them for a connected account
// through report types of their own (connected_account_payout_reconciliation.*), which this
// lister does not use, so a connected account's lister (ForAccount) is refused: list its
// payouts one by one with it.
func (l *Lister) WithReports(opt ReportOptions) (*ReportLister, error) {
	switch {
	case l.c.Account() != "":
		return nil, fmt.Errorf("stripepayouts: reports: the lister reads the connected account %s; Stripe's payout reconciliation "+
			"report is the platform's: list a connected account's payouts with its Lister", l.c.Account())
	case opt.PollInterval < 0 || opt.MaxWait < 0 || opt.MaxBytes < 0:
		return nil, errors.New("stripepayouts: report options: PollInterval, MaxWait or MaxBytes is negative")
	}
	opt.PollInterval = cmp.Or(opt.PollInterval, DefaultReportPoll)
	opt.MaxWait = cmp.Or(opt.MaxWait, DefaultReportWait)
	opt.MaxBytes = cmp.Or(opt.MaxBytes, DefaultReportMaxBytes)
	logger := opt.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &ReportLister{l: l, opt: opt, logger: logger}, nil
}

// Groups returns the Lister's page of payouts after pos, and itemizes those a report covers
// with one report run (see ReportLister), before returning: a rate limit, an outage or the
// context's end there is the page's error, as for any of its calls, and the step is redone.
func (r *ReportLister) Groups(ctx context.Context, pos string) (tieout.GroupPage, error) {
	r.mu.Lock()
	r.members = nil // never serve an earlier page's rows
	r.mu.Unlock()
	page, payouts, err := r.l.groups(ctx, pos)
	if err != nil {
		return tieout.GroupPage{}, err
	}
	members, err := r.itemize(ctx, page, payouts)
	if err != nil {
		return tieout.GroupPage{}, err
	}
	r.mu.Lock()
	r.members = members
	r.mu.Unlock()
	return page, nil
}

// Members returns g's balance transactions from the last page's report, all in one page, if
// the report covered g; otherwise as Lister.Members lists them.
func (r *ReportLister) Members(ctx context.Context, g tieout.Group, after string) (tieout.MemberPage, error) {
	if after == "" && g.Itemized && g.Account == "" {
		r.mu.Lock()
		ms, ok := r.members[g.ID]
		r.mu.Unlock()
		if ok {
			return tieout.MemberPage{Members: slices.Clone(ms)}, nil
		}
	}
	return r.l.Members(ctx, g, after)
}

// itemize runs the page's report, if some of its payouts can be covered by one, and returns
// the members of those it covers, by payout. It returns an error only for what fails any call
// (a rate limit, an outage, a rejected key, the context's end); a report that cannot be used
// is logged, and its payouts are listed one by one.
func (r *ReportLister) itemize(ctx context.Context, page tieout.GroupPage, payouts []*stripe.Payout) (map[string][]tieout.Member, error) {
	var cover []*stripe.Payout
	for _, po := range payouts {
		if po.Automatic && po.Status == stripe.PayoutStatusPaid && po.ArrivalDate > 0 {
			cover = append(cover, po)
		}
	}
	if len(cover) == 0 {
		return nil, nil
	}
	cover, err := r.available(ctx, cover)
	if err != nil || len(cover) == 0 {
		return nil, err
	}
	start, end := cover[0].ArrivalDate, cover[0].ArrivalDate
	currency := string(cover[0].Currency)
	for _, po := range cover {
		start, end = min(start, po.ArrivalDate), max(end, po.ArrivalDate)
		if string(po.Currency) != currency {
			currency = ""
		}
	}
	asked := make(map[string]bool, len(page.Groups)+len(page.Pending))
	for _, g := range slices.Concat(page.Groups, page.Pending) {
		asked[g.ID] = true
	}
	lines, run, err := r.report(ctx, start, end+1, currency, asked)
	if err != nil {
		if fatal(err) {
			return nil, err
		}
		r.logger.Warn("stripepayouts: the page's payouts are listed one by one: the report cannot be used",
			"payouts", len(cover), "run", run, "error", r.l.c.Redact(err.Error()))
		return nil, nil
	}
	members := make(map[string][]tieout.Member, len(cover))
	for _, po := range cover {
		ls := lines[po.ID]
		if len(ls) == 0 {
			// Not in the report: never a payout whose lines are all missing.
			r.logger.Warn("stripepayouts: a payout is listed one by one: the report has no line of it", "payout", po.ID, "run", run)
			continue
		}
		if why := unlike(po, ls); why != "" {
			// A line the tie-out would judge otherwise than the listed one (invalid, its source
			// unread): a file no Stripe writes, never findings of its own.
			r.logger.Warn("stripepayouts: a payout is listed one by one: a line of it in the report "+why, "payout", po.ID, "run", run)
			continue
		}
		if !sums(po, ls) {
			// A drift, or a report that holds only some of the payout's lines (its interval is
			// by effective time, a detail a report could get otherwise): listing tells them
			// apart, so a report never makes a sum finding of its own. Rare, and logged at
			// Info: it is what a sum that does not hold costs.
			r.logger.Info("stripepayouts: a payout is listed one by one: its lines in the report do not sum to it",
				"payout", po.ID, "run", run)
			continue
		}
		ms := make([]tieout.Member, len(ls))
		for i, l := range ls {
			// parseReport refused a cell redact.Keys sees; the client's own key may be
			// shaped otherwise (no mode) and sit inside an id, where only the client sees it.
			ms[i] = r.l.redactMember(r.l.cfg.Options.ReportMember(l))
		}
		members[po.ID] = ms
	}
	return members, nil
}

// available returns the payouts of cover that the report type has data for: effective at or
// after its data_available_start and before its data_available_end, reading the report type
// (one call) when one of them is past the end last read.
func (r *ReportLister) available(ctx context.Context, cover []*stripe.Payout) ([]*stripe.Payout, error) {
	r.mu.Lock()
	start, end := r.dataStart, r.dataEnd
	r.mu.Unlock()
	if slices.ContainsFunc(cover, func(po *stripe.Payout) bool { return po.ArrivalDate+1 >= end }) {
		var typ stripe.ReportingReportType
		if err := r.l.call(ctx, "retrieve report type "+ReportType, "/v1/reporting/report_types/"+ReportType, nil, &typ); err != nil {
			if fatal(err) {
				return nil, err
			}
			r.logger.Warn("stripepayouts: the page's payouts are listed one by one: the report type cannot be read",
				"error", r.l.c.Redact(err.Error()))
			return nil, nil
		}
		if typ.ID != ReportType || typ.DataAvailableEnd <= typ.DataAvailableStart {
			// Not the type's id: the server's bytes, which may hold a key encoded where
			// redaction cannot see it ("sk%5Flive_...").
			r.logger.Warn("stripepayouts: the page's payouts are listed one by one: Stripe answered with another report type, or no data",
				"type_matches", typ.ID == ReportType)
			return nil, nil
		}
		start, end = typ.DataAvailableStart, typ.DataAvailableEnd
		r.mu.Lock()
		r.dataStart, r.dataEnd = start, end
		r.mu.Unlock()
	}
	// A second inside each end: Stripe's docs say both "between data_available_start and
	// data_available_end (inclusive)" and "1 second after" the start, "1 second before" the
	// end; this meets both.
	return slices.DeleteFunc(slices.Clone(cover), func(po *stripe.Payout) bool {
		return po.ArrivalDate <= start || po.ArrivalDate+1 >= end
	}), nil
}

// unlike says why lines, payout po's in a report, would not be judged as its listed balance
// transactions are; empty if they would. Listing gives every line in the payout's currency,
// its net its amount less its fee, and the presentment amount of a charge's, a refund's or a
// dispute's (its source, expanded); a report line without them makes the tie-out find it
// invalid, or its source unread, where listing finds it right.
func unlike(po *stripe.Payout, lines []stripepolicy.ReportLine) string {
	for _, l := range lines {
		switch {
		case !strings.EqualFold(l.Currency, string(po.Currency)):
			// l.Currency is three letters; the payout's is the server's bytes, not quoted.
			return fmt.Sprintf("is in %s, not the payout's currency", l.Currency)
		case l.Fee > 0 && l.Gross < math.MinInt64+l.Fee || l.Fee < 0 && l.Gross > math.MaxInt64+l.Fee || l.Gross-l.Fee != l.Net:
			return "has a net that is not its gross less its fee"
		case l.CustomerFacingCurrency == "" && presented(l.SourceID):
			return "has no customer facing amount"
		}
	}
	return ""
}

// presented reports whether a line whose source is id has a presentment amount: a charge's,
// a refund's or a dispute's, as listing reads it from the expanded source.
func presented(id string) bool {
	for _, p := range []string{"ch_", "py_", "re_", "pyr_", "du_", "dp_"} {
		if strings.HasPrefix(id, p) {
			return true
		}
	}
	return false
}

// sums reports whether lines, payout po's in a report, sum to its amount (its own line, if the
// report has it, left out), as the tie-out adds them up.
func sums(po *stripe.Payout, lines []stripepolicy.ReportLine) bool {
	var sum int64
	for _, l := range lines {
		if l.ReportingCategory == "payout" && l.SourceID == po.ID {
			continue
		}
		next := sum + l.Net
		if (l.Net >= 0) != (next >= sum) {
			return false // overflow: no sum
		}
		sum = next
	}
	return sum == po.Amount
}

// report runs the report over the payouts effective in [start, end) (of currency, if not
// empty), waits for it, downloads its file and reads it: its lines by payout, and the run's id.
func (r *ReportLister) report(ctx context.Context, start, end int64, currency string, asked map[string]bool) (map[string][]stripepolicy.ReportLine, string, error) {
	form := url.Values{"report_type": {ReportType}, "parameters[interval_start]": {strconv.FormatInt(start, 10)},
		"parameters[interval_end]": {strconv.FormatInt(end, 10)}, "parameters[columns][]": reportColumns}
	if currency != "" {
		form.Set("parameters[currency]", currency)
	}
	// A step redone after a rate limit or an outage asks for the same report: it waits for the
	// run its last try created rather than have Stripe run the report again each time.
	key := form.Encode()
	r.mu.Lock()
	last := r.lastRun
	if r.lastKey != key {
		last = ""
	}
	r.mu.Unlock()
	var run stripe.ReportingReportRun
	if last != "" {
		if err := r.retrieve(ctx, last, &run); err != nil {
			if fatal(err) {
				return nil, last, err
			}
			run = stripe.ReportingReportRun{} // gone (a 404): another is created
		}
	}
	if run.ID == "" {
		if err := r.post(ctx, "create report run", "/v1/reporting/report_runs", form, &run); err != nil {
			return nil, "", err
		}
		if !validID("frr_", run.ID) {
			// Not quoted: the server's bytes (see available).
			return nil, "", errors.New("stripepayouts: create report run: Stripe answered with an id that is not a report run id")
		}
		r.mu.Lock()
		r.lastKey, r.lastRun = key, run.ID
		r.mu.Unlock()
	}
	began := time.Now()
	deadline := began.Add(r.opt.MaxWait)
	if d, ok := ctx.Deadline(); ok {
		deadline = minTime(deadline, time.Now().Add(time.Until(d)/2))
	}
	wait := r.opt.PollInterval
	for run.Status == stripe.ReportingReportRunStatusPending {
		left := time.Until(deadline)
		if left <= 0 {
			return nil, run.ID, fmt.Errorf("stripepayouts: report run %s did not finish within %v (MaxWait %v, or half the step's "+
				"time left)", run.ID, time.Since(began).Round(time.Millisecond), r.opt.MaxWait)
		}
		t := time.NewTimer(min(wait, left))
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, run.ID, fmt.Errorf("stripepayouts: wait for report run %s: %w", run.ID, context.Cause(ctx))
		case <-t.C:
		}
		wait = min(2*wait, maxReportPoll)
		id := run.ID
		if err := r.retrieve(ctx, id, &run); err != nil {
			return nil, id, err
		}
	}
	if run.Status != stripe.ReportingReportRunStatusSucceeded {
		// Another run may succeed: the page's next try creates one.
		r.mu.Lock()
		r.lastKey, r.lastRun = "", ""
		r.mu.Unlock()
	}
	// Neither the run's error nor an unknown status is quoted: the server's bytes (see
	// available), not needed to act; the run's id finds them at Stripe.
	switch {
	case run.Status == stripe.ReportingReportRunStatusFailed:
		return nil, run.ID, fmt.Errorf("stripepayouts: report run %s failed (its error at Stripe says why)", run.ID)
	case run.Status != stripe.ReportingReportRunStatusSucceeded:
		return nil, run.ID, fmt.Errorf("stripepayouts: report run %s has a status other than pending, succeeded or failed", run.ID)
	case run.Result == nil:
		return nil, run.ID, fmt.Errorf("stripepayouts: report run %s succeeded without a result file", run.ID)
	}
	if err := r.l.wait(ctx); err != nil {
		return nil, run.ID, err
	}
	b, err := r.l.c.Download(ctx, "download report "+run.ID, run.Result.URL, r.opt.MaxBytes)
	r.l.throttle(err)
	if err != nil {
		return nil, run.ID, err
	}
	lines, err := parseReport(b, asked)
	if err != nil {
		return nil, run.ID, fmt.Errorf("stripepayouts: report run %s: %v", run.ID, err)
	}
	return lines, run.ID, nil
}

// retrieve reads report run id into run, which must be that run.
func (r *ReportLister) retrieve(ctx context.Context, id string, run *stripe.ReportingReportRun) error {
	if err := r.l.call(ctx, "retrieve report run "+id, "/v1/reporting/report_runs/"+id, nil, run); err != nil {
		return err
	}
	if run.ID != id {
		return fmt.Errorf("stripepayouts: retrieve report run %s: Stripe answered with another object "+
			"(a proxy or cache in between?): %w", id, reconcile.ErrUnavailable)
	}
	return nil
}

// minTime is the earlier of a and b.
func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// post makes one POST through the client, paced by the limiter, which is told of a rate limit.
func (r *ReportLister) post(ctx context.Context, op, path string, form url.Values, out any) error {
	if err := r.l.wait(ctx); err != nil {
		return err
	}
	err := r.l.c.Post(ctx, op, path, form, out)
	r.l.throttle(err)
	return err
}

// fatal reports whether err fails the page as it fails any call of the lister's: a rate limit,
// an outage (a 5xx, a timeout, an answer that is not one), a rejected key, the context's end.
// Anything else (a 400 or 404 on the report, a run that failed or took too long, a file too
// large or that does not read, a result url not on the files host) leaves the report unused.
func fatal(err error) bool {
	return errors.Is(err, reconcile.ErrRateLimited) || errors.Is(err, reconcile.ErrUnavailable) ||
		errors.Is(err, reconcile.ErrAbortBatch) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}
