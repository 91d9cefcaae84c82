// Command dashshot draws the README's picture of the Grafana dashboard in
// adapters/prommetrics/mixin without Grafana: it runs a reconciler world that exposes /metrics
// through prommetrics, has a real Prometheus scrape it, asks Prometheus every panel's queries
// over the run, and draws the dashboard's grid from the answers as SVG, screenshotted by
// headless Chromium.
//
// The picture is the dashboard's own queries and layout, the series Prometheus returned and
// each panel's units, stacking, overrides and thresholds; the drawing is this program's,
// in the colors of Grafana's dark theme, and says so at its foot.
//
// # The world
//
// Two jobs, payments-eu and payments-us, over two tables of a throwaway schema (pgstore,
// dropped at the end), call one fake external account (reconciletest's gateway with 20 ms of
// latency) through one AdaptiveLimiter of 60 calls a second, run by a reconcile.Runner; an
// events lane follows the account's event log for payments-eu; a pgoutbox dispatcher applies
// the repairs. The host keeps writing payments and misses one webhook in eight. Over the run
// (fractions of -duration): one call in forty answered 429 at 18-26 %, the dispatcher paused
// at 30-42 %, an outage of the account and its event feed at 52-62 %, a reviewer resolving
// payments-eu's reviews at 45 % and 85 % (payments-us's are left to go stale). Repairs of
// every 23rd row are refused for good (they go dead), every fifth fails once (a retry).
// Findings are stale after 4 minutes and the lag SLO is 5 minutes, so that a 12-minute run
// shows them.
//
// # Running it
//
// From the repository's root, with PostgreSQL as for the tests ($DATABASE_URL or the local
// server), Prometheus (Debian's prometheus package; or apt-get download prometheus and
// dpkg-deb -x it, then pass -prometheus) and Chromium (an interrupt ends the run early and
// draws what was recorded):
//
//	go run ./tools/dashshot -duration 12m -data /tmp/dashshot.json
//
// writes tools/docs/grafana-dashboard.png. -data keeps Prometheus's answers, so that the drawing
// can be redone without running again:
//
//	go run ./tools/dashshot -render -data /tmp/dashshot.json
package main
