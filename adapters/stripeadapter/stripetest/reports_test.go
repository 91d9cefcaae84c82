package stripetest

import (
	"encoding/csv"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stripe/stripe-go/v82"
)

// reportWorld is an account with a refunded payment, a dispute and a EUR payment paid out in one
// automatic payout, and a manual payout, at a fixed clock.
func reportWorld(t *testing.T) (*Server, *time.Time, string) {
	t.Helper()
	now := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	srv := NewServer(Options{Now: func() time.Time { return now }})
	t.Cleanup(srv.Close)
	srv.SetExchangeRate("eur", "usd", 1.1)
	pis := srv.AddPaymentIntents([]PaymentIntent{{Status: stripe.PaymentIntentStatusSucceeded, Amount: 10000, Currency: "usd"},
		{Status: stripe.PaymentIntentStatusSucceeded, Amount: 20000, Currency: "eur"}, {Status: stripe.PaymentIntentStatusSucceeded, Amount: 5, Currency: "usd"}})
	now = now.Add(48 * time.Hour)
	if _, err := srv.Refund(pis[0], 250); err != nil {
		t.Fatal(err)
	}
	if _, err := srv.Dispute(pis[0], 200, stripe.DisputeStatusNeedsResponse, time.Time{}); err != nil {
		t.Fatal(err)
	}
	now = now.Add(time.Hour)
	po := srv.AddPayout(Payout{})
	if err := srv.SetPayoutStatus(po, stripe.PayoutStatusPaid); err != nil {
		t.Fatal(err)
	}
	srv.AddPayout(Payout{Manual: true, Amount: 100, Status: stripe.PayoutStatusPaid})
	now = now.Add(7 * 24 * time.Hour)
	return srv, &now, po
}

// do sends one request to the fake with its key and decodes a JSON answer into out (if not
// nil); it returns the status and the raw body.
func do(t *testing.T, srv *Server, method, path string, form url.Values, out any) (int, []byte) {
	t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, srv.URL()+path, body)
	if err != nil {
		t.Fatal(err)
	}
	req.SetBasicAuth(srv.Key(), "")
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	if out != nil && res.StatusCode == http.StatusOK {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s %s: %v: %s", method, path, err, b)
		}
	}
	return res.StatusCode, b
}

func runForm(start, end int64, columns ...string) url.Values {
	f := url.Values{"report_type": {PayoutReconciliationReport}, "parameters[interval_start]": {itoa(start)}, "parameters[interval_end]": {itoa(end)}}
	for _, c := range columns {
		f.Add("parameters[columns][]", c)
	}
	return f
}

func TestAReportRunItemizesTheAutomaticPayoutsAsTheirBalanceTransactionsListThem(t *testing.T) {
	srv, _, po := reportWorld(t)
	p := mustPayout(t, srv, po)
	srv.SetReporting(Reporting{Polls: 2})
	var run stripe.ReportingReportRun
	if status, b := do(t, srv, "POST", "/v1/reporting/report_runs", runForm(p.ArrivalDate.Unix(), p.ArrivalDate.Unix()+1,
		"automatic_payout_id", "balance_transaction_id", "reporting_category", "currency", "gross", "fee", "net", "source_id",
		"customer_facing_amount", "customer_facing_currency", "charge_id", "payment_intent_id", "available_on_utc"), &run); status != 200 {
		t.Fatalf("create: %d %s", status, b)
	}
	if run.Status != "pending" || run.Result != nil || !strings.HasPrefix(run.ID, "frr_") {
		t.Fatalf("a new run: %+v", run)
	}
	for i := range 3 {
		do(t, srv, "GET", "/v1/reporting/report_runs/"+run.ID, nil, &run)
		if want := map[bool]stripe.ReportingReportRunStatus{true: "pending", false: "succeeded"}[i < 2]; run.Status != want {
			t.Fatalf("retrieve %d: status %s, want %s", i+1, run.Status, want)
		}
	}
	if run.Result == nil || run.Result.URL != srv.URL()+"/v1/files/"+run.Result.ID+"/contents" || run.Result.Size == 0 {
		t.Fatalf("result: %+v", run.Result)
	}
	status, b := do(t, srv, "GET", "/v1/files/"+run.Result.ID+"/contents", nil, nil)
	if status != 200 || int64(len(b)) != run.Result.Size {
		t.Fatalf("download: %d, %d bytes of %d", status, len(b), run.Result.Size)
	}
	rows, err := csv.NewReader(strings.NewReader(string(b))).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	var listed stripe.BalanceTransactionList
	do(t, srv, "GET", "/v1/balance_transactions?limit=100&expand[]=data.source&payout="+po, nil, &listed)
	var want []string
	for _, bt := range listed.Data {
		if bt.Type != "payout" {
			want = append(want, bt.ID)
		}
	}
	var got []string
	for _, r := range rows[1:] {
		got = append(got, r[1])
		if r[0] != po || r[3] != "usd" {
			t.Errorf("row %v: not of %s in usd", r, po)
		}
		bt, _ := srv.BalanceTransaction(r[1])
		if r[2] != bt.ReportingCategory || r[7] != bt.Source {
			t.Errorf("row %v: category or source is not the transaction's %+v", r, bt)
		}
	}
	slices.Sort(want)
	slices.Sort(got)
	if !slices.Equal(got, want) || len(got) != 5 {
		t.Errorf("rows %v, want the payout's lines but its own %v", got, want)
	}
	for _, r := range rows[1:] {
		switch r[2] {
		case "refund":
			if r[4] != "-2.50" || r[8] != "-2.50" || r[9] != "usd" || !strings.HasPrefix(r[10], "ch_") || !strings.HasPrefix(r[11], "pi_") {
				t.Errorf("refund row %v", r)
			}
		case "charge":
			if r[9] == "eur" && (r[4] != "220.00" || r[8] != "200.00") {
				t.Errorf("EUR charge row %v: gross in USD, customer-facing in EUR", r)
			}
			if r[4] == "0.05" && r[5] != "0.30" {
				t.Errorf("small charge row %v: fee 0.30", r)
			}
		}
		if _, err := time.Parse("2006-01-02 15:04:05", r[12]); err != nil {
			t.Errorf("available_on_utc %q: %v", r[12], err)
		}
	}
}

func TestAReportRunIsRefusedOutsideTheDataAvailableAndFailsWhenToldTo(t *testing.T) {
	srv, now, po := reportWorld(t)
	p := mustPayout(t, srv, po)
	srv.SetReporting(Reporting{DataAvailableEnd: p.ArrivalDate})
	var typ stripe.ReportingReportType
	if status, b := do(t, srv, "GET", "/v1/reporting/report_types/"+PayoutReconciliationReport, nil, &typ); status != 200 ||
		typ.DataAvailableEnd != p.ArrivalDate.Unix() || typ.Version != 5 {
		t.Fatalf("report type: %d %s", status, b)
	}
	if status, b := do(t, srv, "POST", "/v1/reporting/report_runs", runForm(p.ArrivalDate.Unix(), p.ArrivalDate.Unix()+1), nil); status != 400 ||
		!strings.Contains(string(b), "only available through") {
		t.Errorf("a run past data_available_end: %d %s", status, b)
	}
	for name, form := range map[string]url.Values{
		"no interval":     {"report_type": {PayoutReconciliationReport}},
		"another type":    runForm(1, 2, "gross"),
		"unknown column":  runForm(1, 2, "secret"),
		"unknown param":   {"report_type": {PayoutReconciliationReport}, "parameters[interval_start]": {"1"}, "parameters[interval_end]": {"2"}, "parameters[payout]": {po}},
		"an empty window": runForm(5, 5),
	} {
		if name == "another type" {
			form.Set("report_type", "balance.summary.1")
		}
		if status, b := do(t, srv, "POST", "/v1/reporting/report_runs", form, nil); status != 400 {
			t.Errorf("%s: %d %s", name, status, b)
		}
	}
	if status, _ := do(t, srv, "GET", "/v1/reporting/report_types/balance.summary.1", nil, nil); status != 404 {
		t.Errorf("another report type: %d", status)
	}
	srv.SetReporting(Reporting{Fail: "We could not run this report."})
	var run stripe.ReportingReportRun
	do(t, srv, "POST", "/v1/reporting/report_runs", runForm(p.ArrivalDate.Unix(), now.Unix()), &run)
	do(t, srv, "GET", "/v1/reporting/report_runs/"+run.ID, nil, &run)
	if run.Status != "failed" || run.Error != "We could not run this report." || run.Result != nil {
		t.Errorf("a failed run: %+v", run)
	}
	if status, _ := do(t, srv, "GET", "/v1/files/file_nosuch/contents", nil, nil); status != 404 {
		t.Errorf("an unknown file: %d", status)
	}
	if srv.Requests(CreateReportRun) != 7 || srv.Requests(RetrieveReportRun) != 1 || srv.Requests(RetrieveReportType) != 2 || srv.Requests(DownloadFile) != 1 {
		t.Errorf("requests by route: create %d, retrieve %d, type %d, download %d", srv.Requests(CreateReportRun), srv.Requests(RetrieveReportRun),
			srv.Requests(RetrieveReportType), srv.Requests(DownloadFile))
	}
}

func TestAReportRunsResultCanBeMadeHostile(t *testing.T) {
	srv, now, po := reportWorld(t)
	p := mustPayout(t, srv, po)
	srv.SetReporting(Reporting{ResultURL: func(string) string { return "https://evil.example/steal" },
		Contents: func(b []byte) []byte { return append(b, "\x00\xff"...) }})
	var run stripe.ReportingReportRun
	do(t, srv, "POST", "/v1/reporting/report_runs", runForm(p.ArrivalDate.Unix(), now.Unix()), &run)
	do(t, srv, "GET", "/v1/reporting/report_runs/"+run.ID, nil, &run)
	if run.Result == nil || run.Result.URL != "https://evil.example/steal" {
		t.Fatalf("result: %+v", run.Result)
	}
	if _, b := do(t, srv, "GET", "/v1/files/"+run.Result.ID+"/contents", nil, nil); !strings.HasSuffix(string(b), "\x00\xff") {
		t.Errorf("contents not rewritten: %q", b)
	}
	srv.Inject(CreateReportRun, Fault{Status: 429})
	if status, _ := do(t, srv, "POST", "/v1/reporting/report_runs", runForm(p.ArrivalDate.Unix(), now.Unix()), nil); status != 429 {
		t.Errorf("an injected 429: %d", status)
	}
}

// Columns given by index ([0], [1], ... [10], as stripe-go encodes them) keep their order.
func TestReportColumnsKeepTheirIndexOrder(t *testing.T) {
	srv, now, po := reportWorld(t)
	p := mustPayout(t, srv, po)
	form := runForm(p.ArrivalDate.Unix(), now.Unix())
	cols := []string{"net", "gross", "fee", "currency", "source_id", "charge_id", "payment_intent_id", "reporting_category",
		"balance_transaction_id", "automatic_payout_id", "available_on_utc", "created_utc"}
	for i, c := range cols {
		form.Set("parameters[columns]["+itoa(int64(i))+"]", c)
	}
	var run stripe.ReportingReportRun
	do(t, srv, "POST", "/v1/reporting/report_runs", form, &run)
	do(t, srv, "GET", "/v1/reporting/report_runs/"+run.ID, nil, &run)
	_, b := do(t, srv, "GET", "/v1/files/"+run.Result.ID+"/contents", nil, nil)
	if header, _, _ := strings.Cut(string(b), "\n"); header != strings.Join(cols, ",") {
		t.Errorf("header %q, want %q", header, strings.Join(cols, ","))
	}
}
