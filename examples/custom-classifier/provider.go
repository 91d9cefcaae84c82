package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
)

// Provider is an in-process fake of a billing provider's API, served over HTTP:
//
//	GET  /v1/subscriptions/{id}   the subscription, or 404
//	POST /v1/subscriptions/{id}   {"quantity": n} sets its seats; an Idempotency-Key header
//	                              makes a repeated request replay the first answer
//
// Like real providers, it keeps the answer of every request that carried an idempotency key
// and replays it, with the header Idempotent-Replayed: true, to a request with the same key
// and body, without applying anything again; the same key with another body is a 400. Every
// update it applies is one entry in Changes (at a real provider: an event, a proration on the
// customer's invoice, perhaps an e-mail to the customer).
type Provider struct {
	srv *httptest.Server

	mu        sync.Mutex
	subs      map[string]Remote
	failReads map[string]bool
	loseNext  map[string]int
	keys      map[string]storedAnswer
	changes   []Change
	updates   map[string]int // update requests received per subscription
}

// Change is one update the provider applied.
type Change struct {
	Subscription   string
	From, To       int
	IdempotencyKey string
}

type storedAnswer struct {
	body   []byte // the request body, compared on replay
	status int
	answer []byte
}

// NewProvider starts a provider with no subscriptions. Close it when done.
func NewProvider() *Provider {
	p := &Provider{
		subs: map[string]Remote{}, failReads: map[string]bool{}, loseNext: map[string]int{},
		keys: map[string]storedAnswer{}, updates: map[string]int{},
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/subscriptions/{id}", p.retrieve)
	mux.HandleFunc("POST /v1/subscriptions/{id}", p.update)
	p.srv = httptest.NewServer(mux)
	return p
}

// URL is the API's base URL.
func (p *Provider) URL() string { return p.srv.URL }

// Close stops the server.
func (p *Provider) Close() { p.srv.Close() }

// Add stores a subscription, replacing any with its id.
func (p *Provider) Add(s Remote) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.subs[s.ID] = s
}

// FailReads makes every read of subscription id answer 503, as during an outage.
func (p *Provider) FailReads(id string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.failReads[id] = true
}

// LoseNextUpdateAnswer makes the next update of subscription id apply, and then answer 504
// Gateway Timeout, as a load balancer does when the backend was slow: the caller cannot tell
// whether the update happened.
func (p *Provider) LoseNextUpdateAnswer(id string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.loseNext[id]++
}

// Subscription returns the provider's subscription id.
func (p *Provider) Subscription(id string) (Remote, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	s, ok := p.subs[id]
	return s, ok
}

// Changes returns the updates applied, in order.
func (p *Provider) Changes() []Change {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]Change(nil), p.changes...)
}

// UpdateRequests returns the number of update requests received for subscription id,
// replayed and failed ones included.
func (p *Provider) UpdateRequests(id string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.updates[id]
}

func (p *Provider) retrieve(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	p.mu.Lock()
	s, ok := p.subs[id]
	fail := p.failReads[id]
	p.mu.Unlock()
	switch {
	case fail:
		writeError(w, http.StatusServiceUnavailable, "service_unavailable", "try again later")
	case !ok:
		writeError(w, http.StatusNotFound, "resource_missing", "no such subscription: "+id)
	default:
		writeJSON(w, http.StatusOK, s)
	}
}

func (p *Provider) update(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	body, err := io.ReadAll(r.Body)
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request", "unreadable body")
		return
	}
	key := r.Header.Get("Idempotency-Key")

	p.mu.Lock()
	defer p.mu.Unlock()
	p.updates[id]++
	if prev, seen := p.keys[key]; key != "" && seen {
		if !bytes.Equal(prev.body, body) {
			writeError(w, http.StatusBadRequest, "idempotency_error",
				"keys for idempotent requests can only be used with the same parameters")
			return
		}
		w.Header().Set("Idempotent-Replayed", "true")
		writeRaw(w, prev.status, prev.answer)
		return
	}
	var req struct {
		Quantity *int `json:"quantity"`
	}
	s, ok := p.subs[id]
	status, answer := http.StatusOK, []byte(nil)
	switch {
	case json.Unmarshal(body, &req) != nil || req.Quantity == nil || *req.Quantity < 1:
		status, answer = http.StatusBadRequest, errorBody("invalid_request", "quantity must be a positive integer")
	case !ok:
		status, answer = http.StatusNotFound, errorBody("resource_missing", "no such subscription: "+id)
	default:
		p.changes = append(p.changes, Change{Subscription: id, From: s.Quantity, To: *req.Quantity, IdempotencyKey: key})
		s.Quantity = *req.Quantity
		p.subs[id] = s
		answer, _ = json.Marshal(s)
	}
	if key != "" {
		p.keys[key] = storedAnswer{body: body, status: status, answer: answer}
	}
	if status == http.StatusOK && p.loseNext[id] > 0 {
		p.loseNext[id]--
		writeError(w, http.StatusGatewayTimeout, "gateway_timeout", "upstream timed out")
		return
	}
	writeRaw(w, status, answer)
}

func errorBody(code, msg string) []byte {
	b, _ := json.Marshal(map[string]map[string]string{"error": {"code": code, "message": msg}})
	return b
}

func writeError(w http.ResponseWriter, status int, code, msg string) {
	writeRaw(w, status, errorBody(code, msg))
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, _ := json.Marshal(v)
	writeRaw(w, status, b)
}

func writeRaw(w http.ResponseWriter, status int, b []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}
