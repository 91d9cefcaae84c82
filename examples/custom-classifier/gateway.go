package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/reconcilekit/reconcile"
)

// Billing is the client of the billing provider's API. It is the job's reconcile.Gateway
// (Fetch), and the push handler's way to send our seat count (SetQuantity).
type Billing struct {
	base string
	http *http.Client
}

var (
	_ reconcile.Gateway[Remote] = (*Billing)(nil)
	_ reconcile.IDChecker       = (*Billing)(nil)
)

// NewBilling returns a client of the API at base.
func NewBilling(base string) *Billing {
	return &Billing{base: strings.TrimSuffix(base, "/"), http: &http.Client{Timeout: 5 * time.Second}}
}

// CheckID refuses, without a call, an id that cannot be a subscription's.
func (b *Billing) CheckID(id string) error {
	if !strings.HasPrefix(id, "sub_") || strings.ContainsAny(id, "/?#% ") {
		return &reconcile.ReviewError{Kind: reconcile.KindInvalidExternalID, Detail: "not a subscription id: " + id}
	}
	return nil
}

// Fetch returns the provider's subscription, mapping every failure to the error the engine
// expects: 404 is reconcile.ErrNotFound, 429 a *reconcile.RateLimitError, 401 and 403 abort
// the batch, 400 is for review, and 5xx, timeouts and refused connections are
// reconcile.ErrUnavailable, so the row is Unverifiable.
func (b *Billing) Fetch(ctx context.Context, id string) (Remote, error) {
	var s Remote
	_, err := b.do(ctx, http.MethodGet, id, nil, "", &s)
	return s, err
}

// SetQuantity sets the seats of subscription id, sending key as the Idempotency-Key: a
// request repeated with the same key is answered, not applied, again. replayed reports that
// the provider answered from an earlier request with the key.
func (b *Billing) SetQuantity(ctx context.Context, id string, seats int, key string) (s Remote, replayed bool, err error) {
	body, err := json.Marshal(map[string]int{"quantity": seats})
	if err != nil {
		return Remote{}, false, err
	}
	h, err := b.do(ctx, http.MethodPost, id, body, key, &s)
	return s, h.Get("Idempotent-Replayed") == "true", err
}

func (b *Billing) do(ctx context.Context, method, id string, body []byte, key string, out any) (http.Header, error) {
	req, err := http.NewRequestWithContext(ctx, method, b.base+"/v1/subscriptions/"+url.PathEscape(id), bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	resp, err := b.http.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("billing: %s %s: %w: %v", method, id, reconcile.ErrUnavailable, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return resp.Header, fmt.Errorf("billing: %s %s: read answer: %w: %v", method, id, reconcile.ErrUnavailable, err)
	}
	if resp.StatusCode == http.StatusOK {
		if err := json.Unmarshal(data, out); err != nil {
			return resp.Header, fmt.Errorf("billing: %s %s: decode answer: %w: %v", method, id, reconcile.ErrUnavailable, err)
		}
		return resp.Header, nil
	}
	var e struct {
		Error struct{ Code, Message string } `json:"error"`
	}
	_ = json.Unmarshal(data, &e)
	msg := fmt.Sprintf("%d %s", resp.StatusCode, e.Error.Message)
	switch {
	case resp.StatusCode == http.StatusNotFound:
		return resp.Header, fmt.Errorf("billing: %s: %w", id, reconcile.ErrNotFound)
	case resp.StatusCode == http.StatusTooManyRequests:
		secs, _ := strconv.Atoi(resp.Header.Get("Retry-After"))
		return resp.Header, &reconcile.RateLimitError{RetryAfter: time.Duration(secs) * time.Second, Reason: e.Error.Message}
	case resp.StatusCode == http.StatusUnauthorized, resp.StatusCode == http.StatusForbidden:
		return resp.Header, fmt.Errorf("billing: the API key was refused (%s): %w", msg, reconcile.ErrAbortBatch)
	case resp.StatusCode == http.StatusBadRequest:
		return resp.Header, &reconcile.ReviewError{Detail: msg}
	default:
		return resp.Header, fmt.Errorf("billing: %s %s: %s: %w", method, id, msg, reconcile.ErrUnavailable)
	}
}

// isUnavailable reports an error after which the same request may succeed.
func isUnavailable(err error) bool {
	return errors.Is(err, reconcile.ErrUnavailable) || errors.Is(err, reconcile.ErrRateLimited)
}
