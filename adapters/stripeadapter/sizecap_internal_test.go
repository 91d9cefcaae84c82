package stripeadapter

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/reconcilekit/reconcile"
)

func TestSizeCappedFailsTheByteAfterItsLimit(t *testing.T) {
	for _, c := range []struct {
		name      string
		size, max int
		tooLarge  bool
	}{
		{"empty", 0, 10, false},
		{"under the limit", 9, 10, false},
		{"at the limit", 10, 10, false},
		{"one byte past it", 11, 10, true},
		{"far past it", 1000, 10, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, oneByte := range []bool{false, true} {
				var r io.Reader = strings.NewReader(strings.Repeat("a", c.size))
				if oneByte {
					r = iotest.OneByteReader(r)
				}
				got, err := io.ReadAll(&sizeCapped{r: io.NopCloser(r), left: int64(c.max)})
				if c.tooLarge != errors.Is(err, errTooLarge) || !c.tooLarge && err != nil || len(got) != min(c.size, c.max) {
					t.Fatalf("one byte a read %t: %d bytes, %v", oneByte, len(got), err)
				}
			}
		})
	}
}

// TestAnAnswerInflatingPastTheCapFailsItsRead answers with 64 KB of gzip that net/http inflates
// to more than maxAnswerBytes: stripe-go reads an answer whole, without a limit, so such an
// answer (half a megabyte of it inflated to 512 MiB made the process allocate 1.7 GB) fails its
// read at the cap, naming none of it.
func TestAnAnswerInflatingPastTheCapFailsItsRead(t *testing.T) {
	var z bytes.Buffer
	zw := gzip.NewWriter(&z)
	io.WriteString(zw, `{"object":"list","data":[],"x":"`)
	zeros := bytes.Repeat([]byte("0"), 1<<20)
	for range maxAnswerBytes>>20 + 1 {
		zw.Write(zeros)
	}
	io.WriteString(zw, `"}`)
	zw.Close()
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Encoding", "gzip")
		w.Header().Set("Content-Type", "application/json")
		w.Write(z.Bytes())
	}))
	defer hs.Close()
	g, err := NewObjectGateway(GatewayConfig{Key: "sk_test_1", BaseURL: hs.URL}, PaymentIntents())
	if err != nil {
		t.Fatal(err)
	}
	page, _, err := g.listPage(context.Background(), nil, "")
	if !errors.Is(err, reconcile.ErrUnavailable) || !strings.Contains(err.Error(), errTooLarge.Error()) || strings.Contains(err.Error(), "000") {
		t.Fatalf("list: %d objects, %.300v; want ErrUnavailable with the size error and none of the answer", len(page), err)
	}
}
