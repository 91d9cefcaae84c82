package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"
)

// prometheus is a Prometheus server of our own, scraping the world's /metrics.
type prometheus struct {
	cmd  *exec.Cmd
	addr string
}

// startPrometheus runs bin with a throwaway data directory under dir, scraping target every
// interval with honor_labels, as the README's scrape config does: the metrics' job label (the
// reconcile job) wins over the target's.
func startPrometheus(ctx context.Context, bin, dir, target string, interval time.Duration) (*prometheus, error) {
	if _, err := exec.LookPath(bin); err != nil {
		return nil, fmt.Errorf("dashshot: no Prometheus at %s (%w): apt-get install --no-install-recommends prometheus, "+
			"or apt-get download prometheus && dpkg-deb -x prometheus_*.deb DIR, then -prometheus DIR/usr/bin/prometheus", bin, err)
	}
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	config := fmt.Sprintf(`global:
  scrape_interval: %[1]s
  evaluation_interval: %[1]s
scrape_configs:
  - job_name: reconcile
    honor_labels: true
    static_configs:
      - targets: [%[2]q]
        labels: {instance: reconciler-0} # a name for the legends, not a random port
`, interval, target)
	cfgPath := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfgPath, []byte(config), 0o600); err != nil {
		return nil, err
	}
	logFile, err := os.Create(filepath.Join(dir, "prometheus.log"))
	if err != nil {
		return nil, err
	}
	defer logFile.Close() // Prometheus writes to its own copy
	cmd := exec.CommandContext(ctx, bin, "--config.file="+cfgPath, "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	ownProcessGroup(cmd) // an interrupt stops the world, not the Prometheus that recorded it
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &prometheus{cmd: cmd, addr: addr}
	for deadline := time.Now().Add(30 * time.Second); ; {
		resp, err := http.Get("http://" + addr + "/-/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return p, nil
			}
		}
		if time.Now().After(deadline) {
			p.stop()
			return nil, fmt.Errorf("dashshot: Prometheus not ready after 30 s; see %s", logFile.Name())
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func (p *prometheus) stop() {
	_ = p.cmd.Process.Signal(os.Interrupt)
	_ = p.cmd.Wait()
}

// series is one series of a range query: its labels and its points.
type series struct {
	Metric map[string]string `json:"metric"`
	Points [][2]float64      `json:"points"` // unix seconds, value
}

// queryRange asks Prometheus for expr over [start, end] at step.
func (p *prometheus) queryRange(ctx context.Context, expr string, start, end time.Time, step time.Duration) ([]series, error) {
	q := url.Values{"query": {expr}, "start": {unix(start)}, "end": {unix(end)}, "step": {strconv.FormatFloat(step.Seconds(), 'f', -1, 64)}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+p.addr+"/api/v1/query_range?"+q.Encode(), nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var body struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			Result []struct {
				Metric map[string]string `json:"metric"`
				Values [][2]any          `json:"values"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return nil, fmt.Errorf("dashshot: query %s: %w", expr, err)
	}
	if body.Status != "success" {
		return nil, fmt.Errorf("dashshot: query %s: %s", expr, body.Error)
	}
	var out []series
	for _, r := range body.Data.Result {
		s := series{Metric: r.Metric}
		for _, v := range r.Values {
			t, _ := v[0].(float64)
			f, err := strconv.ParseFloat(fmt.Sprint(v[1]), 64)
			if err != nil {
				continue
			}
			s.Points = append(s.Points, [2]float64{t, f})
		}
		out = append(out, s)
	}
	return out, nil
}

func unix(t time.Time) string { return strconv.FormatFloat(float64(t.UnixMilli())/1000, 'f', 3, 64) }

// freeAddr returns a loopback address with a port nobody listens on now.
func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}
