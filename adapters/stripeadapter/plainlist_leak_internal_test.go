package stripeadapter

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stripe/stripe-go/v82"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter/internal/keyecho"
)

// TestAnAnswerEchoingAKeyFailsWithoutIt lists answers that neither decoder takes, each echoing
// a key where a proxy could put it: the list call's error does not carry it, however it is
// written (stripe-go puts the answer's first 500 bytes in its error).
func TestAnAnswerEchoingAKeyFailsWithoutIt(t *testing.T) {
	escaped := "sk\\u005f" + strings.TrimPrefix(keyecho.Key, "sk_")
	// A key that starts at the 490th byte, which stripe-go's sample cuts.
	across := `{"object":"list","data":[{"id":"pi_1","x":"`
	across += strings.Repeat("a", 490-len(across)) + `","k":"` + keyecho.Key + `"},5]}`
	for _, c := range []struct {
		name   string
		status int
		page   string
	}{
		{"not JSON", http.StatusOK, `{"object":"list","data":[{"id":"` + keyecho.Key + `","x":`},
		{"not JSON, the other key", http.StatusOK, `{"object":"list","data":[{"id":"` + keyecho.OtherKey + `"`},
		{"an amount that is a key", http.StatusOK, `{"object":"list","data":[{"id":"pi_1","amount":"` + keyecho.Key + `"}]}`},
		{"a metadata key that is a key", http.StatusOK, `{"object":"list","data":[{"id":"pi_1","metadata":{"` + keyecho.OtherKey + `":5}}]}`},
		{"a charge that is a number, a key after it", http.StatusOK, `{"object":"list","data":[{"id":"pi_1","latest_charge":5,"x":"` + keyecho.Key + `"}]}`},
		{"the key across the sample's end", http.StatusOK, across},
		{"the key escaped", http.StatusOK, `{"object":"list","data":[{"id":"` + escaped + `","amount":"x"}]}`},
		{"the key escaped, not JSON", http.StatusOK, `{"object":"list","data":[{"id":"` + escaped + `"`},
		{"the key escaped, the sample's end in the page", http.StatusOK, `{"object":"list","data":[{"id":"` + escaped + `'): ","amount":"x"}]}`},
		{"the key escaped in a proxy's page", http.StatusBadGateway, `<html>Bad gateway for Bearer ` + escaped + `</html>`},
	} {
		t.Run(c.name, func(t *testing.T) {
			hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(c.status)
				io.WriteString(w, c.page)
			}))
			defer hs.Close()
			plain := PaymentIntents()
			plain.Expand = nil
			for _, obj := range []Object[*stripe.PaymentIntent]{PaymentIntents(), plain} {
				g, err := NewObjectGateway(GatewayConfig{Key: keyecho.Key, BaseURL: hs.URL}, obj)
				if err != nil {
					t.Fatal(err)
				}
				_, _, err = g.listPage(context.Background(), nil, "")
				if err == nil {
					t.Fatal("the answer was listed")
				}
				keyecho.AssertNone(t, "the list call's error", fmt.Sprintf("%v %+v %#v", err, err, err))
				if c.status == http.StatusOK && !strings.Contains(err.Error(), "json: ") && !strings.Contains(err.Error(), "JSON input") {
					t.Errorf("the error lost encoding/json's: %v", err)
				}
			}
		})
	}
}

func TestWithoutBodySample(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"dial tcp: connection refused", "dial tcp: connection refused"},
		{"Couldn't deserialize JSON (response status: 200, body sample: '{\"a\":'): unexpected end of JSON input",
			"Couldn't deserialize JSON (response status: 200): unexpected end of JSON input"},
		{"Couldn't deserialize JSON (response status: 200, body sample: '{\"a\":\"'): \"}'): invalid character 'x' after object key",
			"Couldn't deserialize JSON (response status: 200): invalid character 'x' after object key"},
		{"Couldn't deserialize JSON (response status: 502, body sample: '<html>", "Couldn't deserialize JSON (response status: 502)"},
	} {
		if got := withoutBodySample(c.in); got != c.want {
			t.Errorf("withoutBodySample(%q)\n = %q\nwant %q", c.in, got, c.want)
		}
	}
}

// TestAnErrorAnswerWithoutStripesErrorFailsWithoutIt answers an error status with JSON that
// has no Stripe "error" member, which stripe-go makes its whole error's text: the list, the
// retrieve and the download fail as unavailable, naming the status and none of the answer.
func TestAnErrorAnswerWithoutStripesErrorFailsWithoutIt(t *testing.T) {
	escaped := "sk\\u005f" + strings.TrimPrefix(keyecho.Key, "sk_")
	for _, answer := range []string{
		`{"message":"Bearer ` + escaped + `"}`,
		`{"error":null,"message":"` + escaped + `"}`,
		`{"message":"` + escaped + `","padding":"` + strings.Repeat("a", 1<<20) + `"}`,
		`null`,
		// What stripe-go's sample opens with, in the answer: the whole answer is still cut.
		`{"message":"Bearer ` + escaped + `","m":", body sample: '"}`,
		`{"message":"Bearer ` + escaped + `","m":", body sample: 'x'): "}`,
	} {
		hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadGateway)
			io.WriteString(w, answer)
		}))
		g, err := NewObjectGateway(GatewayConfig{Key: keyecho.Key, BaseURL: hs.URL}, PaymentIntents())
		if err != nil {
			t.Fatal(err)
		}
		_, _, lerr := g.listPage(context.Background(), nil, "")
		_, ferr := g.Fetch(context.Background(), "pi_1")
		_, derr := g.Client().Download(context.Background(), "download report", hs.URL+"/v1/files/file_1/contents", 1<<10)
		hs.Close()
		for _, err := range []error{lerr, ferr, derr} {
			text := fmt.Sprintf("%v %+v %#v", err, err, err)
			keyecho.AssertNone(t, "the error", text)
			if !errors.Is(err, reconcile.ErrUnavailable) || !strings.Contains(err.Error(), "502") || strings.Contains(text, "message") ||
				len(err.Error()) > 300 {
				t.Errorf("%.300s: want ErrUnavailable naming the status and none of the answer", err)
			}
		}
	}
}
