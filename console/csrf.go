package console

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"strconv"
	"strings"
	"time"
)

// tokenField is the hidden form field that carries the anti-forgery token.
const tokenField = "csrf_token"

// Token lifetimes: a form left open over a working day still posts; a clock a minute ahead on
// another replica does not refuse its tokens.
const (
	tokenTTL  = 12 * time.Hour
	tokenSkew = time.Minute
)

// tokens makes and checks anti-forgery tokens: "<unix seconds>.<HMAC-SHA256(key, actor, time)>".
// A token is bound to the actor Authenticate returned, so one taken from another person's page
// is refused, and it needs no server-side session.
type tokens struct {
	key []byte
}

func (t *tokens) mac(actor string, issued int64) []byte {
	m := hmac.New(sha256.New, t.key)
	m.Write([]byte("reconcile-console-csrf-v1\x00"))
	m.Write([]byte(strconv.FormatInt(issued, 10)))
	m.Write([]byte{0})
	m.Write([]byte(actor))
	return m.Sum(nil)
}

func (t *tokens) issue(actor string, now time.Time) string {
	issued := now.Unix()
	return strconv.FormatInt(issued, 10) + "." + base64.RawURLEncoding.EncodeToString(t.mac(actor, issued))
}

func (t *tokens) valid(actor, token string, now time.Time) bool {
	ts, sig, ok := strings.Cut(token, ".")
	if !ok {
		return false
	}
	issued, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return false
	}
	got, err := base64.RawURLEncoding.DecodeString(sig)
	if err != nil || !hmac.Equal(got, t.mac(actor, issued)) {
		return false
	}
	at := time.Unix(issued, 0)
	return !at.After(now.Add(tokenSkew)) && now.Sub(at) <= tokenTTL
}
