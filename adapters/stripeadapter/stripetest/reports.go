package stripetest

import (
	"bytes"
	"cmp"
	"encoding/csv"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/reconcilekit/reconcile"
)

// The fake's Reporting API: report runs of the itemized payout reconciliation report
// (payout_reconciliation.itemized.5), generated from the fake's own payouts and balance
// transactions (the world GET /v1/balance_transactions?payout= lists), its report type, and
// the result file's contents on the fake's base URL (Stripe serves those on files.stripe.com).

// PayoutReconciliationReport is the report type the fake runs.
const PayoutReconciliationReport = "payout_reconciliation.itemized.5"

// reportColumns are the columns the fake's report can have, in its order; reportDefaults those
// a run without parameters[columns] gets (the fake's choice: Stripe documents its own).
var (
	reportColumns = []string{"automatic_payout_id", "automatic_payout_effective_at_utc", "automatic_payout_effective_at",
		"balance_transaction_id", "created_utc", "created", "available_on_utc", "available_on", "currency", "gross", "fee", "net",
		"reporting_category", "source_id", "description", "customer_facing_amount", "customer_facing_currency", "charge_id",
		"payment_intent_id"}
	reportDefaults = []string{"automatic_payout_id", "automatic_payout_effective_at", "balance_transaction_id", "created_utc",
		"created", "available_on_utc", "available_on", "currency", "gross", "fee", "net", "reporting_category", "description"}
)

// Reporting configures the fake's report runs. The zero value runs every report at once (its
// first retrieve has succeeded) over all the data there is.
type Reporting struct {
	// DataAvailableStart and DataAvailableEnd are the report type's data_available_start and
	// data_available_end: a run's interval must lie within them. Zero means the Unix epoch, and
	// Options.Now at the request.
	DataAvailableStart, DataAvailableEnd time.Time
	// Polls is how many retrieves of a run answer pending before the run is finished.
	Polls int
	// Fail, if not empty, makes runs finish failed with this error.
	Fail string
	// ResultURL, if not nil, rewrites the url of a run's result file, as a hostile server or
	// proxy might (another host, another scheme).
	ResultURL func(url string) string
	// Contents, if not nil, rewrites a result file's contents as they are served.
	Contents func(csv []byte) []byte
}

// SetReporting configures the report runs created from then on.
func (s *Server) SetReporting(r Reporting) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reporting = r
}

// reportRun is a report run held by the fake, with its result.
type reportRun struct {
	id, account        string
	created            int64
	start, end         int64
	columns            []string
	currency, category string
	polls              int // retrieves still pending
	fail               string
	fileID             string
	contents           []byte
	resultURL          func(string) string
	rewrite            func([]byte) []byte
	finished           int64 // when it finished, 0 before
	failed             bool
	customColumns      bool
}

// createReportRun is POST /v1/reporting/report_runs: it checks the parameters as Stripe does,
// and computes the report now from the fake's data. The caller does not hold s.mu.
func (s *Server) createReportRun(b []byte, account string, form url.Values) ([]byte, *failure) {
	for param := range form {
		if param != "report_type" && !strings.HasPrefix(param, "parameters[") && !isArrayParam(param, "expand") {
			return nil, unknownParameter(param)
		}
	}
	if typ := form.Get("report_type"); typ != PayoutReconciliationReport {
		if typ == "" {
			return nil, invalidRequest("report_type", "Missing required param: report_type.")
		}
		return nil, invalidRequest("report_type", "The fake runs only %s, not %s.", PayoutReconciliationReport, typ)
	}
	now := s.now().Unix()
	s.mu.Lock()
	defer s.mu.Unlock()
	from, until := s.reportData(now)
	run := &reportRun{account: account, created: now, polls: s.reporting.Polls, fail: s.reporting.Fail,
		resultURL: s.reporting.ResultURL, rewrite: s.reporting.Contents, columns: reportDefaults}
	var err *failure
	// In the order of their index, so that columns given as [0], [1], ... keep theirs.
	params := slices.SortedFunc(maps.Keys(form), func(a, b string) int {
		return cmp.Or(cmp.Compare(len(a), len(b)), strings.Compare(a, b))
	})
	for _, param := range params {
		vs := form[param]
		name, ok := strings.CutPrefix(param, "parameters[")
		if !ok {
			continue
		}
		v := vs[0]
		switch name {
		case "interval_start]", "interval_end]":
			n, perr := strconv.ParseInt(v, 10, 64)
			if perr != nil {
				return nil, invalidRequest(param, "Invalid integer: %s", v)
			}
			if name == "interval_start]" {
				run.start = n
			} else {
				run.end = n
			}
		case "currency]":
			run.currency = strings.ToLower(v)
		case "reporting_category]":
			run.category = v
		case "timezone]":
			if v != "Etc/UTC" && v != "UTC" {
				return nil, invalidRequest(param, "The fake reports in Etc/UTC only, not %s.", v)
			}
		default:
			if !isArrayParam(param, "parameters[columns]") {
				return nil, invalidRequest(param, "Received unknown parameter: %s for report type %s", param, PayoutReconciliationReport)
			}
			if !run.customColumns {
				run.columns, run.customColumns = nil, true
			}
			for _, c := range vs {
				if !slices.Contains(reportColumns, c) {
					return nil, invalidRequest(param, "Unknown column %s for report type %s.", c, PayoutReconciliationReport)
				}
				run.columns = append(run.columns, c)
			}
		}
	}
	switch {
	case run.start == 0 || run.end == 0:
		err = invalidRequest("parameters[interval_start]", "Report type %s requires parameters interval_start and interval_end.", PayoutReconciliationReport)
	case run.start >= run.end:
		err = invalidRequest("parameters[interval_end]", "interval_end must be after interval_start.")
	case run.start < from:
		err = invalidRequest("parameters[interval_start]", "Data for the report type %s is only available from %s; you requested interval_start = %s.",
			PayoutReconciliationReport, reportTime(from), reportTime(run.start))
	case run.end > until:
		err = invalidRequest("parameters[interval_end]", "Data for the report type %s is only available through %s; you requested interval_end = %s.",
			PayoutReconciliationReport, reportTime(until), reportTime(run.end))
	}
	if err != nil {
		return nil, err
	}
	if s.reportRuns == nil {
		s.reportRuns, s.reportFiles = make(map[string]*reportRun), make(map[string]*reportRun)
	}
	run.id = s.newID("frr_", func(id string) bool { return s.reportRuns[id] != nil })
	run.fileID = s.newID("file_", func(id string) bool { return s.reportFiles[id] != nil })
	run.contents = s.payoutReconciliation(run)
	s.reportRuns[run.id] = run
	s.reportFiles[run.fileID] = run
	return s.appendReportRun(b, run), nil
}

// reportData is the data_available_start and _end of the report type at now; the caller holds
// s.mu.
func (s *Server) reportData(now int64) (int64, int64) {
	from, until := int64(0), now
	if !s.reporting.DataAvailableStart.IsZero() {
		from = s.reporting.DataAvailableStart.Unix()
	}
	if !s.reporting.DataAvailableEnd.IsZero() {
		until = s.reporting.DataAvailableEnd.Unix()
	}
	return from, until
}

// payoutReconciliation computes run's CSV: a row for each balance transaction paid out in an
// automatic payout of the account whose arrival (its effective time) is in the run's interval,
// not pending nor in transit, the payout's own transaction left out; by payout, then by
// transaction, oldest first. The caller holds s.mu.
func (s *Server) payoutReconciliation(run *reportRun) []byte {
	var buf bytes.Buffer
	w := csv.NewWriter(&buf)
	_ = w.Write(run.columns)
	pos := s.payoutsBy[run.account]
	if pos == nil {
		w.Flush()
		return buf.Bytes()
	}
	pos.sort()
	var payouts []*payout
	for _, e := range pos.items {
		po := e.v
		if po.automatic && po.arrivalDate >= run.start && po.arrivalDate < run.end && po.status != "pending" && po.status != "in_transit" {
			payouts = append(payouts, po)
		}
	}
	slices.SortStableFunc(payouts, func(a, b *payout) int { return int(a.arrivalDate - b.arrivalDate) })
	row := make([]string, len(run.columns))
	for _, po := range payouts {
		po.txns.sort()
		for _, e := range po.txns.items {
			t := e.v
			if t.typ == "payout" && t.source == po.id || run.currency != "" && t.currency != run.currency ||
				run.category != "" && t.reportingCategory != run.category {
				continue
			}
			for i, c := range run.columns {
				row[i] = s.reportCell(c, po, t)
			}
			_ = w.Write(row)
		}
	}
	w.Flush()
	return buf.Bytes()
}

// reportCell is column c of transaction t's row, t paid out in po. The caller holds s.mu.
func (s *Server) reportCell(c string, po *payout, t *txn) string {
	switch c {
	case "automatic_payout_id":
		return po.id
	case "automatic_payout_effective_at_utc", "automatic_payout_effective_at":
		return reportTime(po.arrivalDate)
	case "balance_transaction_id":
		return t.id
	case "created_utc", "created":
		return reportTime(t.created)
	case "available_on_utc", "available_on":
		return reportTime(t.availableOn)
	case "currency":
		return t.currency
	case "gross":
		return majorUnits(t.amount, t.currency)
	case "fee":
		return majorUnits(t.fee, t.currency)
	case "net":
		return majorUnits(t.net(), t.currency)
	case "reporting_category":
		return t.reportingCategory
	case "source_id":
		return t.source
	case "description":
		return t.description
	}
	// The columns of the source: the charge, refund or dispute's amount and ids.
	var amount int64
	var currency, charge, pi string
	switch {
	case s.charges[t.source] != nil:
		ch := s.charges[t.source]
		amount, currency, charge, pi = ch.amount, ch.currency, ch.id, ch.paymentIntent
		if ch.amountCaptured > 0 {
			amount = ch.amountCaptured
		}
	case s.refunds[t.source] != nil:
		r := s.refunds[t.source]
		amount, currency, charge, pi = r.amount, r.currency, r.charge, r.paymentIntent
	case s.disputes[t.source] != nil:
		d := s.disputes[t.source]
		amount, currency, charge, pi = d.amount, d.currency, d.charge, d.paymentIntent
	default:
		return ""
	}
	if t.amount < 0 {
		amount = -amount
	}
	switch c {
	case "customer_facing_amount":
		return majorUnits(amount, currency)
	case "customer_facing_currency":
		return currency
	case "charge_id":
		return charge
	case "payment_intent_id":
		return pi
	}
	return ""
}

// majorUnits writes minor units of currency as the report does, a decimal in major units:
// 1234 USD is 12.34, -5 USD -0.05, 100 JPY 100.
func majorUnits(minor int64, currency string) string {
	exp := reconcile.CurrencyExponent(currency)
	neg := minor < 0
	digits := strconv.FormatUint(uint64(minor), 10)
	if neg {
		digits = strconv.FormatUint(-uint64(minor), 10)
	}
	for len(digits) <= exp {
		digits = "0" + digits
	}
	out := digits
	if exp > 0 {
		out = digits[:len(digits)-exp] + "." + digits[len(digits)-exp:]
	}
	if neg {
		out = "-" + out
	}
	return out
}

// reportTime writes a time as the report's _utc columns do.
func reportTime(sec int64) string { return time.Unix(sec, 0).UTC().Format("2006-01-02 15:04:05") }

// retrieveReportRun is GET /v1/reporting/report_runs/{id}: pending for the run's Polls
// retrieves, then succeeded with its result, or failed with its error.
func (s *Server) retrieveReportRun(b []byte, account, id string) ([]byte, *failure) {
	now := s.now().Unix()
	s.mu.Lock()
	defer s.mu.Unlock()
	run := s.reportRuns[id]
	if run == nil || run.account != account {
		return nil, noSuch(http.StatusNotFound, "reporting.report_run", id, "")
	}
	switch {
	case run.finished != 0:
	case run.polls > 0:
		run.polls--
	default:
		run.finished = now
		run.failed = run.fail != ""
	}
	return s.appendReportRun(b, run), nil
}

// appendReportRun renders a report run as Stripe does; the caller holds s.mu.
func (s *Server) appendReportRun(b []byte, run *reportRun) []byte {
	status, errText := "pending", ""
	switch {
	case run.finished != 0 && run.failed:
		status, errText = "failed", run.fail
	case run.finished != 0:
		status = "succeeded"
	}
	b = append(b, `{"id":`...)
	b = appendString(b, run.id)
	b = append(b, `,"object":"reporting.report_run","created":`...)
	b = strconv.AppendInt(b, run.created, 10)
	b = append(b, `,"error":`...)
	b = appendNullable(b, errText)
	b = append(b, `,"livemode":false,"parameters":{`...)
	if run.customColumns {
		b = append(b, `"columns":`...)
		b = appendStringArray(b, run.columns)
		b = append(b, ',')
	}
	if run.currency != "" {
		b = append(b, `"currency":`...)
		b = appendString(b, run.currency)
		b = append(b, ',')
	}
	b = append(b, `"interval_end":`...)
	b = strconv.AppendInt(b, run.end, 10)
	b = append(b, `,"interval_start":`...)
	b = strconv.AppendInt(b, run.start, 10)
	if run.category != "" {
		b = append(b, `,"reporting_category":`...)
		b = appendString(b, run.category)
	}
	b = append(b, `},"report_type":`...)
	b = appendString(b, PayoutReconciliationReport)
	b = append(b, `,"result":`...)
	if status == "succeeded" {
		u := s.URL() + "/v1/files/" + run.fileID + "/contents"
		if run.resultURL != nil {
			u = run.resultURL(u)
		}
		b = append(b, `{"id":`...)
		b = appendString(b, run.fileID)
		b = append(b, `,"object":"file","created":`...)
		b = strconv.AppendInt(b, run.finished, 10)
		b = append(b, `,"expires_at":`...)
		b = strconv.AppendInt(b, run.finished+365*24*3600, 10)
		b = append(b, `,"filename":`...)
		b = appendString(b, run.fileID+".csv")
		b = append(b, `,"purpose":"finance_report_run","size":`...)
		b = strconv.AppendInt(b, int64(len(run.contents)), 10)
		b = append(b, `,"title":`...)
		b = appendString(b, "FinanceReportRun "+run.id)
		b = append(b, `,"type":"csv","url":`...)
		b = appendString(b, u)
		b = append(b, '}')
	} else {
		b = append(b, "null"...)
	}
	b = append(b, `,"status":`...)
	b = appendString(b, status)
	b = append(b, `,"succeeded_at":`...)
	if status == "succeeded" {
		b = strconv.AppendInt(b, run.finished, 10)
	} else {
		b = append(b, "null"...)
	}
	return append(b, '}')
}

// appendStringArray appends a JSON array of strings.
func appendStringArray(b []byte, ss []string) []byte {
	b = append(b, '[')
	for i, s := range ss {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, s)
	}
	return append(b, ']')
}

// retrieveReportType is GET /v1/reporting/report_types/{id}, for the one report type the fake
// runs.
func (s *Server) retrieveReportType(b []byte, id string) ([]byte, *failure) {
	if id != PayoutReconciliationReport {
		return nil, noSuch(http.StatusNotFound, "reporting.report_type", id, "")
	}
	now := s.now().Unix()
	s.mu.Lock()
	from, until := s.reportData(now)
	s.mu.Unlock()
	b = append(b, `{"id":`...)
	b = appendString(b, id)
	b = append(b, `,"object":"reporting.report_type","data_available_end":`...)
	b = strconv.AppendInt(b, until, 10)
	b = append(b, `,"data_available_start":`...)
	b = strconv.AppendInt(b, from, 10)
	b = append(b, `,"default_columns":`...)
	b = appendStringArray(b, reportDefaults)
	b = append(b, `,"livemode":false,"name":"Itemized payout reconciliation","updated":`...)
	b = strconv.AppendInt(b, until, 10)
	return append(b, `,"version":5}`...), nil
}

// fileContents is GET /v1/files/{id}/contents for a succeeded run's result: its CSV, rewritten
// by Reporting.Contents if set.
func (s *Server) fileContents(account, id string) ([]byte, *failure) {
	s.mu.Lock()
	defer s.mu.Unlock()
	run := s.reportFiles[id]
	if run == nil || run.account != account || run.finished == 0 || run.failed {
		return nil, noSuch(http.StatusNotFound, "file", id, "")
	}
	if run.rewrite != nil {
		return run.rewrite(slices.Clone(run.contents)), nil
	}
	return run.contents, nil
}
