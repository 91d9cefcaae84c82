package stripeadapter

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stripe/stripe-go/v82"
)

// hostilePage is a page a proxy, a man in the middle or a misbehaving server could send.
type hostilePage struct {
	name string
	page string
}

// intentJSON is an intent with its charge expanded, as a page of PaymentIntents holds it; the
// other descriptors read its id, object, status, created and metadata.
const intentJSON = `{"id":"pi_1","object":"payment_intent","amount":1000,"currency":"eur","status":"succeeded",` +
	`"created":1700000000,"latest_charge":{"id":"ch_1","object":"charge","amount":1000,"amount_refunded":300,` +
	`"refunded":false,"payment_intent":"pi_1","status":"succeeded"},"metadata":{"order":"o1"}}`

// listOf is a page of the objects given as JSON.
func listOf(objects ...string) string {
	return `{"object":"list","url":"/v1/x","has_more":false,"data":[` + strings.Join(objects, ",") + `]}`
}

// intentWith is intentJSON with its key replaced by the JSON members given (removed if
// members is empty), or added at the end if the key is not in it.
func intentWith(key, members string) string {
	obj := map[string]string{
		"id": `"id":"pi_1"`, "amount": `"amount":1000`, "status": `"status":"succeeded"`, "created": `"created":1700000000`,
		"latest_charge": `"latest_charge":{"id":"ch_1","object":"charge","amount":1000,"amount_refunded":300,"refunded":false,"payment_intent":"pi_1","status":"succeeded"}`,
		"metadata":      `"metadata":{"order":"o1"}`,
	}
	if _, ok := obj[key]; !ok {
		return strings.TrimSuffix(intentJSON, "}") + "," + members + "}"
	}
	s := strings.Replace(intentJSON, obj[key], members, 1)
	return strings.NewReplacer(",,", ",", "{,", "{", ",}", "}").Replace(s)
}

// nested is an intent whose charge's intent is expanded, and its charge, depth times.
func nested(depth int) string {
	var b strings.Builder
	for range depth {
		b.WriteString(`{"id":"pi_1","object":"payment_intent","latest_charge":{"id":"ch_1","object":"charge","payment_intent":`)
	}
	b.WriteString(`"pi_1"`)
	for range depth {
		b.WriteString(`}}`)
	}
	return b.String()
}

func hostilePages() []hostilePage {
	big := func(n int) string { return strings.Repeat("a", n) }
	return []hostilePage{
		// Duplicate keys: encoding/json takes the last, decoding into what the first left.
		{"id twice", listOf(intentWith("id", `"id":"pi_1","id":"pi_2"`))},
		{"status twice", listOf(intentWith("status", `"status":"succeeded","status":"canceled"`))},
		{"latest_charge twice, both objects", listOf(intentWith("latest_charge", `"latest_charge":{"id":"ch_1","amount_refunded":300,"refunded":true},"latest_charge":{"id":"ch_2","amount":5}`))},
		{"latest_charge twice, an object then an id", listOf(intentWith("latest_charge", `"latest_charge":{"id":"ch_1","amount_refunded":300},"latest_charge":"ch_2"`))},
		{"latest_charge twice, an id then an object", listOf(intentWith("latest_charge", `"latest_charge":"ch_2","latest_charge":{"id":"ch_1","amount_refunded":300}`))},
		{"latest_charge twice, an object then null", listOf(intentWith("latest_charge", `"latest_charge":{"id":"ch_1"},"latest_charge":null`))},
		{"latest_charge twice, null then an object", listOf(intentWith("latest_charge", `"latest_charge":null,"latest_charge":{"id":"ch_1"}`))},
		{"latest_charge twice, in another case", listOf(intentWith("latest_charge", `"latest_charge":{"id":"ch_1","amount_refunded":300},"LATEST_CHARGE":{"id":"ch_2"}`))},
		{"latest_charge twice, escaped", listOf(intentWith("latest_charge", `"latest_charge":{"id":"ch_1","amount_refunded":300},"latest_ch\u0061rge":{"id":"ch_2"}`))},
		{"latest_charge twice, a long s", listOf(intentWith("latest_charge", `"latest_charge":{"id":"ch_1","amount_refunded":300},"late`+"\u017f"+`t_charge":{"id":"ch_2"}`))},
		{"data twice", `{"object":"list","data":[` + intentJSON + `],"data":[{"id":"pi_2"}]}`},
		{"data twice, the second shorter", `{"object":"list","data":[` + intentJSON + `,` + intentJSON + `],"data":[{"id":"pi_2"}]}`},
		{"data twice, the second longer", `{"object":"list","data":[{"id":"pi_2"}],"data":[` + intentJSON + `,{"id":"pi_3"}]}`},
		{"data twice, the second null", `{"object":"list","data":[` + intentJSON + `],"data":null}`},
		{"data twice, in another case", `{"object":"list","data":[` + intentJSON + `],"Data":[{"id":"pi_2"}]}`},
		{"data twice, escaped", `{"object":"list","data":[` + intentJSON + `],"d\u0061ta":[{"id":"pi_2"}]}`},
		{"data twice, an id then an object", `{"object":"list","data":["pi_2"],"data":[` + intentJSON + `]}`},
		{"data twice, an object then an id", `{"object":"list","data":[` + intentJSON + `],"data":["pi_2"]}`},
		{"object twice", `{"object":"list","data":[],"object":"x"}`},
		{"metadata twice", listOf(intentWith("metadata", `"metadata":{"a":"1","b":"2"},"metadata":{"a":"3"}`))},
		{"a metadata key twice", listOf(intentWith("metadata", `"metadata":{"a":"1","a":"2"}`))},
		// null where there is an object, an array, a string, a number.
		{"null page", `null`},
		{"null data", `{"object":"list","data":null}`},
		{"null object", `{"object":null,"data":[]}`},
		{"null element", listOf(intentJSON, `null`)},
		{"null latest_charge", listOf(intentWith("latest_charge", `"latest_charge":null`))},
		{"null id", listOf(intentWith("id", `"id":null`))},
		{"null amount", listOf(intentWith("amount", `"amount":null`))},
		{"null status", listOf(intentWith("status", `"status":null`))},
		{"null metadata", listOf(intentWith("metadata", `"metadata":null`))},
		{"null metadata value", listOf(intentWith("metadata", `"metadata":{"a":null}`))},
		{"null has_more", `{"object":"list","has_more":null,"data":[]}`},
		// Wrong JSON types.
		{"amount a string", listOf(intentWith("amount", `"amount":"1000"`))},
		{"amount an exponent", listOf(intentWith("amount", `"amount":1e3`))},
		{"amount a float", listOf(intentWith("amount", `"amount":1000.0`))},
		{"amount a fraction", listOf(intentWith("amount", `"amount":10.5`))},
		{"amount past int64", listOf(intentWith("amount", `"amount":9223372036854775808`))},
		{"amount huge", listOf(intentWith("amount", `"amount":99999999999999999999999999999999999999`))},
		{"amount negative zero", listOf(intentWith("amount", `"amount":-0`))},
		{"amount most negative", listOf(intentWith("amount", `"amount":-9223372036854775808`))},
		{"amount true", listOf(intentWith("amount", `"amount":true`))},
		{"created a string", listOf(intentWith("created", `"created":"1700000000"`))},
		{"created an exponent", listOf(intentWith("created", `"created":1.7e9`))},
		{"created huge", listOf(intentWith("created", `"created":1e400`))},
		{"id a number", listOf(intentWith("id", `"id":5`))},
		{"status a number", listOf(intentWith("status", `"status":5`))},
		{"status an object", listOf(intentWith("status", `"status":{"a":1}`))},
		{"metadata value a number", listOf(intentWith("metadata", `"metadata":{"a":5}`))},
		{"metadata an array", listOf(intentWith("metadata", `"metadata":["a"]`))},
		{"latest_charge a number", listOf(intentWith("latest_charge", `"latest_charge":5`))},
		{"latest_charge an array", listOf(intentWith("latest_charge", `"latest_charge":[{"id":"ch_1"}]`))},
		{"latest_charge amount a string", listOf(intentWith("latest_charge", `"latest_charge":{"id":"ch_1","amount_refunded":"300"}`))},
		{"has_more a string", `{"object":"list","has_more":"true","data":[]}`},
		{"has_more a number", `{"object":"list","has_more":1,"data":[]}`},
		{"object a number", `{"object":5,"data":[]}`},
		{"object not list", `{"object":"payment_intent","data":[` + intentJSON + `]}`},
		{"data missing", `{"object":"list","has_more":false}`},
		{"data an object", `{"object":"list","data":{"id":"pi_1"}}`},
		{"data a string", `{"object":"list","data":"pi_1"}`},
		{"data a number", `{"object":"list","data":5}`},
		{"element a number", listOf(`5`)},
		{"element an array", listOf(`[` + intentJSON + `]`)},
		{"element true", listOf(`true`)},
		{"element an empty string", listOf(`""`)},
		{"element an escaped id", listOf(`"pi_\u0031\""`)},
		{"page an array", `[` + intentJSON + `]`},
		{"page a string", `"list"`},
		{"an empty body", ``},
		{"trailing bytes", listOf(intentJSON) + `{}`},
		// Escapes, bytes that are not UTF-8, control characters.
		{"id with an escaped NUL", listOf(intentWith("id", `"id":"pi_\u0000"`))},
		{"id with a lone high surrogate", listOf(intentWith("id", `"id":"pi_\ud800"`))},
		{"id with a lone low surrogate", listOf(intentWith("id", `"id":"pi_\udc00x"`))},
		{"id with reversed surrogates", listOf(intentWith("id", `"id":"\udc00\ud800"`))},
		{"id with a surrogate pair", listOf(intentWith("id", `"id":"\ud83d\ude00"`))},
		{"id not UTF-8", listOf(intentWith("id", "\"id\":\"pi_\xff\xfe\""))},
		{"id a truncated rune", listOf(intentWith("id", "\"id\":\"pi_\xe2\x82\""))},
		{"id with a raw NUL", listOf(intentWith("id", "\"id\":\"pi_\x00\""))},
		{"id with a raw control character", listOf(intentWith("id", "\"id\":\"pi_\x01\""))},
		{"id with a raw newline", listOf(intentWith("id", "\"id\":\"pi_\n\""))},
		{"status escaped", listOf(intentWith("status", `"status":"succe\u0065ded"`))},
		{"a key not UTF-8", listOf(intentWith("status", "\"st\xffatus\":\"canceled\""))},
		{"a NUL after the page", listOf(intentJSON) + "\x00"},
		{"a byte order mark", "\xef\xbb\xbf" + listOf(intentJSON)},
		// Large values.
		{"a 10 KB id", listOf(intentWith("id", `"id":"pi_`+big(10<<10)+`"`))},
		{"a 1 MB id", listOf(intentWith("id", `"id":"pi_`+big(1<<20)+`"`))},
		{"a 1 MB metadata value", listOf(intentWith("metadata", `"metadata":{"a":"`+big(1<<20)+`"}`))},
		{"a 10 KB metadata key", listOf(intentWith("metadata", `"metadata":{"`+big(10<<10)+`":"v"}`))},
		{"a 1 MB unknown field", listOf(intentWith("x_unknown", `"x_unknown":"`+big(1<<20)+`"`))},
		// Deep nesting.
		{"an unknown field nested 9,000 deep", listOf(intentWith("x_unknown", `"x_unknown":`+strings.Repeat("[", 9000)+strings.Repeat("]", 9000)))},
		{"an unknown field nested past encoding/json's limit", listOf(intentWith("x_unknown", `"x_unknown":`+strings.Repeat("[", 10001)+strings.Repeat("]", 10001)))},
		{"metadata nested 9,000 deep", listOf(intentWith("metadata", `"metadata":{"a":`+strings.Repeat(`{"a":`, 9000)+`1`+strings.Repeat("}", 9001)))},
		{"expanded objects nested 10 deep", listOf(nested(10))},
		{"expanded objects nested 100 deep", listOf(nested(100))},
		// Unknown fields, hostile metadata keys, expanded objects in expanded objects.
		{"unknown fields", `{"object":"list","x":{"data":[{"id":"pi_9"}]},"data":[` + intentWith("x_unknown", `"x_unknown":{"latest_charge":{"id":"ch_9"}}`) + `],"y":[1,2]}`},
		{"hostile metadata keys", listOf(intentWith("metadata", `"metadata":{"":"e","\u0000":"n","__proto__":"p","constructor":"c","a.b[c]":"d","\ud800":"s","k\"ey":"q","sk_live_51Zz":"key"}`))},
		{"the charge's intent expanded", listOf(intentWith("latest_charge", `"latest_charge":{"id":"ch_1","amount_refunded":300,"payment_intent":`+intentJSON+`}`))},
		{"the charge's balance transaction and refunds expanded", listOf(intentWith("latest_charge", `"latest_charge":{"id":"ch_1","balance_transaction":{"id":"txn_1","amount":1000,"fee":30},"refunds":{"object":"list","data":[{"id":"re_1","amount":300,"charge":{"id":"ch_1"}}]}}`))},
		{"the charge's intent expanded, its fields twice", listOf(intentWith("latest_charge", `"latest_charge":{"id":"ch_1","payment_intent":{"id":"pi_1","status":"succeeded"},"payment_intent":{"id":"pi_2"}}`))},
		{"the customer expanded twice", listOf(intentWith("customer", `"customer":{"id":"cus_1","email":"a@b"},"customer":{"id":"cus_2"}`))},
		// Keys echoed into the page.
		{"a key in a field", listOf(intentWith("status", `"status":"sk_live_51AbCdEfGhIjKlMn"`))},
		{"a key in a page that is not JSON", `{"object":"list","data":[{"id":"rk_live_51AbCdEfGhIjKlMn",`},
	}
}

// TestHostileListPagesDecodeAsStripeGoDecodesThem feeds every hostile page to every ship-ready
// descriptor: the one-pass decode gives the page stripe-go's decode gives, or falls back to it.
func TestHostileListPagesDecodeAsStripeGoDecodesThem(t *testing.T) {
	plainIntents := PaymentIntents()
	plainIntents.Expand = nil
	for _, c := range hostilePages() {
		t.Run(c.name, func(t *testing.T) {
			for name, check := range map[string]func(*testing.T){
				"PaymentIntents, charged": func(t *testing.T) { decodeBoth(t, PaymentIntents(), []byte(c.page)) },
				"PaymentIntents":          func(t *testing.T) { decodeBoth(t, plainIntents, []byte(c.page)) },
				"Subscriptions":           func(t *testing.T) { decodeBoth(t, Subscriptions(), []byte(c.page)) },
				"Invoices":                func(t *testing.T) { decodeBoth(t, Invoices(), []byte(c.page)) },
				"CheckoutSessions":        func(t *testing.T) { decodeBoth(t, CheckoutSessions(), []byte(c.page)) },
				"Accounts":                func(t *testing.T) { decodeBoth(t, Accounts(), []byte(c.page)) },
			} {
				t.Run(name, check)
			}
		})
	}
}

// TestAMemberTwiceIsListedAsStripeGoListsIt lists pages that repeat "data", or an intent's
// "latest_charge": the one pass decoded the second into the objects the first left, so that
// an intent the last "data" gives without a status listed as the first's succeeded one, and a
// charge with the first's refund. stripe-go's methods take the last whole.
func TestAMemberTwiceIsListedAsStripeGoListsIt(t *testing.T) {
	for _, c := range []struct {
		name, page string
		check      func(pi *stripe.PaymentIntent) bool
	}{
		{"data", `{"object":"list","data":[` + intentJSON + `],"data":[{"id":"pi_2","object":"payment_intent"}]}`,
			func(pi *stripe.PaymentIntent) bool {
				return pi.ID == "pi_2" && pi.Status == "" && pi.Amount == 0 && pi.LatestCharge == nil
			}},
		{"latest_charge", listOf(intentWith("latest_charge", `"latest_charge":{"id":"ch_1","amount_refunded":300,"refunded":true},"latest_charge":{"id":"ch_2","amount":1000}`)),
			func(pi *stripe.PaymentIntent) bool {
				return pi.ID == "pi_1" && pi.LatestCharge != nil && pi.LatestCharge.ID == "ch_2" && pi.LatestCharge.AmountRefunded == 0 && !pi.LatestCharge.Refunded
			}},
	} {
		t.Run(c.name, func(t *testing.T) {
			hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, c.page) }))
			defer hs.Close()
			g, err := NewObjectGateway(GatewayConfig{Key: "sk_test_1", BaseURL: hs.URL}, PaymentIntents())
			if err != nil {
				t.Fatal(err)
			}
			page, _, err := g.listPage(context.Background(), nil, "")
			if err != nil || len(page) != 1 || !c.check(page[0]) {
				t.Fatalf("page %+v, error %v", page, err)
			}
		})
	}
}
