package stripetest

import (
	"fmt"
	"maps"
	"net/url"
	"strconv"
	"time"

	"github.com/stripe/stripe-go/v82"
)

// Invoice is an Invoice held by the fake, in the fields the project reads.
type Invoice struct {
	// ID is the object's id; empty means a generated one, "in_" and 24 alphanumeric
	// characters.
	ID string
	// Account is the Connect account that owns the invoice; "" is the platform. An invoice
	// of a subscription belongs to the subscription's account.
	Account string
	// Subscription is the id of the subscription that billed the invoice, rendered as
	// parent.subscription_details.subscription (API version basil); empty means an invoice
	// without a parent. The subscription must exist, and its latest_invoice becomes the
	// newest of its invoices.
	Subscription string
	// Customer is the customer's id; empty means the subscription's customer, or a generated
	// "cus_..." id.
	Customer string
	// Status is the invoice's status; empty means draft.
	Status stripe.InvoiceStatus
	// Created is when the invoice was created; zero means Options.Now.
	Created time.Time
	// Currency is a lowercase ISO code; empty means the subscription's currency, or "usd".
	Currency string
	// AmountDue is what the invoice asks for, in the currency's smallest unit.
	AmountDue int64
	// AmountPaid is what was paid of it; zero means AmountDue for a paid invoice and 0
	// otherwise. amount_remaining is AmountDue − AmountPaid.
	AmountPaid int64
	// Metadata is copied when the invoice is added.
	Metadata map[string]string
}

// invState is an invoice as stored, copied into events as snapshots.
type invState struct {
	id, account     string
	subscription    string
	customer        string
	status          stripe.InvoiceStatus
	created         int64
	currency        string
	amountDue       int64
	amountPaid      int64
	attemptCount    int64
	finalizedAt     int64 // 0: null, also for the status_transitions below
	paidAt          int64
	voidedAt        int64
	uncollectibleAt int64
	metadata        map[string]string
}

// invoice is a stored Invoice.
type invoice struct {
	invState
	seq uint64
}

func (in *invoice) sortKey() sortKey { return sortKey{in.created, in.seq} }

// knownInvoiceStatuses are the Invoice statuses Stripe documents.
var knownInvoiceStatuses = map[stripe.InvoiceStatus]bool{
	stripe.InvoiceStatusDraft:         true,
	stripe.InvoiceStatusOpen:          true,
	stripe.InvoiceStatusPaid:          true,
	stripe.InvoiceStatusUncollectible: true,
	stripe.InvoiceStatusVoid:          true,
}

// invoiceEvents are the events a change to each status records.
var invoiceEvents = map[stripe.InvoiceStatus][]string{
	stripe.InvoiceStatusOpen:          {"invoice.finalized"},
	stripe.InvoiceStatusPaid:          {"invoice.paid", "invoice.payment_succeeded"},
	stripe.InvoiceStatusUncollectible: {"invoice.marked_uncollectible"},
	stripe.InvoiceStatusVoid:          {"invoice.voided"},
}

// AddInvoice stores inv and records invoice.created at its created time. An invoice added past
// draft was finalized when created, and one added paid was paid then. It returns the
// invoice's id. It panics, as a broken fixture should, if the id is already used, the status
// is unknown, the amounts are negative or AmountPaid exceeds AmountDue, or the subscription
// does not exist or belongs to another account.
func (s *Server) AddInvoice(inv Invoice) string {
	return s.AddInvoices([]Invoice{inv})[0]
}

// AddInvoices stores many invoices at once, like AddInvoice, and returns their ids in order.
func (s *Server) AddInvoices(invs []Invoice) []string {
	return addObjects(s, invs, adding[Invoice, invState, *invoice]{
		kind: invoiceObjects, name: "invoice",
		objects:  func(s *Server) *map[string]*invoice { return &s.invoices },
		idPrefix: "in_", idLen: 24,
		event:   "invoice.created",
		created: func(inv Invoice) time.Time { return inv.Created },
		build:   buildInvoice,
		id:      func(st *invState) *string { return &st.id },
		store:   func(st invState, seq uint64) *invoice { return &invoice{invState: st, seq: seq} },
		stored: func(s *Server, in *invoice) {
			// buildInvoice checked the subscription exists in the invoice's account.
			if sb := s.subs[in.subscription]; sb != nil && (sb.latestInvoice == "" || compareKeys(sb.latestInvoiceAt, in.sortKey()) < 0) {
				sb.latestInvoice, sb.latestInvoiceAt = in.id, in.sortKey()
			}
		},
	})
}

// buildInvoice is an added invoice's state, with its defaults; it panics for a broken
// fixture, as AddInvoice documents. The caller holds s.mu.
func buildInvoice(s *Server, inv Invoice, created int64) invState {
	st := invState{
		id:           inv.ID,
		account:      inv.Account,
		subscription: inv.Subscription,
		customer:     inv.Customer,
		status:       inv.Status,
		created:      created,
		currency:     inv.Currency,
		amountDue:    inv.AmountDue,
		amountPaid:   inv.AmountPaid,
	}
	if st.status == "" {
		st.status = stripe.InvoiceStatusDraft
	}
	if !knownInvoiceStatuses[st.status] {
		panic(fmt.Sprintf("stripetest: unknown invoice status %q", st.status))
	}
	if st.amountDue < 0 || st.amountPaid < 0 || st.amountPaid > st.amountDue {
		panic(fmt.Sprintf("stripetest: invoice amounts due %d and paid %d", st.amountDue, st.amountPaid))
	}
	if st.subscription != "" {
		sb := s.subs[st.subscription]
		if sb == nil || sb.account != st.account {
			panic("stripetest: invoice of an unknown subscription " + st.subscription + " (or one of another account)")
		}
		if st.customer == "" {
			st.customer = sb.customer
		}
		if st.currency == "" {
			st.currency = sb.currency
		}
	}
	if st.customer == "" {
		st.customer = randomID("cus_", 14)
	}
	if st.currency == "" {
		st.currency = "usd"
	}
	if st.status != stripe.InvoiceStatusDraft {
		st.finalizedAt = st.created
	}
	switch st.status {
	case stripe.InvoiceStatusPaid:
		st.paidAt = st.created
		if st.amountPaid == 0 {
			st.amountPaid = st.amountDue
		}
	case stripe.InvoiceStatusVoid:
		st.voidedAt = st.created
	case stripe.InvoiceStatusUncollectible:
		st.uncollectibleAt = st.created
	}
	if len(inv.Metadata) > 0 {
		st.metadata = maps.Clone(inv.Metadata)
	}
	return st
}

// Invoice returns the invoice with the id, whatever its account.
func (s *Server) Invoice(id string) (Invoice, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	in, ok := s.invoices[id]
	if !ok {
		return Invoice{}, false
	}
	return Invoice{
		ID:           in.id,
		Account:      in.account,
		Subscription: in.subscription,
		Customer:     in.customer,
		Status:       in.status,
		Created:      unixTime(in.created),
		Currency:     in.currency,
		AmountDue:    in.amountDue,
		AmountPaid:   in.amountPaid,
		Metadata:     maps.Clone(in.metadata),
	}, true
}

// SetInvoiceStatus moves an invoice to a status at Options.Now, as Stripe's invoice actions do,
// and records the events Stripe sends: invoice.finalized for open, invoice.paid and
// invoice.payment_succeeded for paid (amount_paid becomes amount_due), invoice.voided for void,
// invoice.marked_uncollectible for uncollectible. Its status_transitions record the time. It
// fails for an unknown invoice or status and for a change Stripe does not allow: paid and
// void are final, a draft can only be finalized (open), and nothing goes back to draft.
func (s *Server) SetInvoiceStatus(id string, status stripe.InvoiceStatus) error {
	if !knownInvoiceStatuses[status] {
		return fmt.Errorf("stripetest: unknown invoice status %q", status)
	}
	at := s.now().Unix()
	return s.changeInvoice(id, at, func(in *invoice) ([]string, error) {
		switch {
		case in.status == stripe.InvoiceStatusPaid || in.status == stripe.InvoiceStatusVoid:
			return nil, fmt.Errorf("stripetest: invoice %s is %s, which is final", in.id, in.status)
		case status == stripe.InvoiceStatusDraft:
			return nil, fmt.Errorf("stripetest: invoice %s cannot go back to draft", in.id)
		case in.status == stripe.InvoiceStatusDraft && status != stripe.InvoiceStatusOpen:
			return nil, fmt.Errorf("stripetest: draft invoice %s must be finalized (open) before it is %s", in.id, status)
		}
		in.status = status
		switch status {
		case stripe.InvoiceStatusOpen:
			if in.finalizedAt == 0 {
				in.finalizedAt = at
			}
		case stripe.InvoiceStatusPaid:
			in.paidAt, in.amountPaid = at, in.amountDue
		case stripe.InvoiceStatusVoid:
			in.voidedAt = at
		case stripe.InvoiceStatusUncollectible:
			in.uncollectibleAt = at
		}
		return invoiceEvents[status], nil
	})
}

// FailInvoicePayment records a failed attempt to pay an open invoice at Options.Now:
// attempt_count grows, attempted becomes true, and invoice.payment_failed is recorded; the
// invoice stays open. It fails for an unknown invoice or one that is not open.
func (s *Server) FailInvoicePayment(id string) error {
	return s.changeInvoice(id, s.now().Unix(), func(in *invoice) ([]string, error) {
		if in.status != stripe.InvoiceStatusOpen {
			return nil, fmt.Errorf("stripetest: invoice %s is %s, not open", in.id, in.status)
		}
		in.attemptCount++
		return []string{"invoice.payment_failed"}, nil
	})
}

// SetInvoiceAmountPaid sets what was paid of an invoice, as a partial payment or a payment made
// outside Stripe would, and records invoice.updated. It fails for an unknown invoice, an
// amount outside [0, amount_due], or a change to a paid or void invoice.
func (s *Server) SetInvoiceAmountPaid(id string, paid int64) error {
	return s.changeInvoice(id, s.now().Unix(), func(in *invoice) ([]string, error) {
		if in.status == stripe.InvoiceStatusPaid || in.status == stripe.InvoiceStatusVoid {
			return nil, fmt.Errorf("stripetest: invoice %s is %s, which is final", in.id, in.status)
		}
		if paid < 0 || paid > in.amountDue {
			return nil, fmt.Errorf("stripetest: amount paid %d is not within the amount due %d of %s", paid, in.amountDue, in.id)
		}
		in.amountPaid = paid
		return []string{"invoice.updated"}, nil
	})
}

// changeInvoice applies change to an invoice under the lock and records the events it names
// at the time at, each with a snapshot after the change.
func (s *Server) changeInvoice(id string, at int64, change func(*invoice) ([]string, error)) error {
	return changeObject(s, invoiceObjects, "invoice", id, at, func(in *invoice) snapshot { return in.invState }, change)
}

// invoiceObjects serves the invoice routes.
var invoiceObjects = objectKind[*invoice]{object: kindInvoice, path: "/v1/invoices",
	byID:      func(s *Server) map[string]*invoice { return s.invoices },
	byAccount: func(s *Server) map[string]*index[*invoice] { return s.invoicesBy },
	account:   func(in *invoice) string { return in.account },
	render:    func(b []byte, in *invoice, x expander) []byte { return appendInvoice(b, &in.invState, x) },
	own: func(param string) bool {
		return param == "status" || param == "customer" || param == "subscription"
	},
	selection: func(s *Server, account string, q url.Values) (*index[*invoice], func(*invoice) bool, *failure) {
		status := stripe.InvoiceStatus(q.Get("status"))
		if q.Has("status") && !knownInvoiceStatuses[status] {
			return nil, nil, invalidRequest("status", "Invalid status: must be one of draft, open, paid, uncollectible, or void")
		}
		if !q.Has("status") && !q.Has("customer") && !q.Has("subscription") {
			return s.invoicesBy[account], nil, nil
		}
		customer, sub := q.Get("customer"), q.Get("subscription")
		return s.invoicesBy[account], func(in *invoice) bool {
			return (!q.Has("status") || in.status == status) &&
				(!q.Has("customer") || in.customer == customer) &&
				(!q.Has("subscription") || in.subscription == sub)
		}, nil
	},
}

// appendInvoice appends an Invoice as Stripe renders it, in the fields stripe.Invoice decodes;
// fields the fake does not model are null or empty. A subscription's invoice has the parent
// of API version basil, parent.subscription_details.subscription, instead of the older
// top-level subscription field, which stripe-go v82 no longer decodes.
func appendInvoice(b []byte, st *invState, e expander) []byte {
	b = append(b, `{"id":`...)
	b = appendString(b, st.id)
	b = append(b, `,"object":"invoice","account_country":null,"account_name":null,"amount_due":`...)
	b = strconv.AppendInt(b, st.amountDue, 10)
	b = append(b, `,"amount_overpaid":0,"amount_paid":`...)
	b = strconv.AppendInt(b, st.amountPaid, 10)
	b = append(b, `,"amount_remaining":`...)
	b = strconv.AppendInt(b, st.amountDue-st.amountPaid, 10)
	b = append(b, `,"amount_shipping":0,"application":null,"attempt_count":`...)
	b = strconv.AppendInt(b, st.attemptCount, 10)
	b = append(b, `,"attempted":`...)
	b = strconv.AppendBool(b, st.attemptCount > 0 || st.status == stripe.InvoiceStatusPaid)
	b = append(b, `,"auto_advance":`...)
	b = strconv.AppendBool(b, st.status == stripe.InvoiceStatusDraft || st.status == stripe.InvoiceStatusOpen)
	b = append(b, `,"billing_reason":`...)
	if st.subscription != "" {
		b = append(b, `"subscription_cycle"`...)
	} else {
		b = append(b, `"manual"`...)
	}
	b = append(b, `,"collection_method":"charge_automatically","created":`...)
	b = strconv.AppendInt(b, st.created, 10)
	b = append(b, `,"currency":`...)
	b = appendString(b, st.currency)
	b = append(b, `,"customer":`...)
	b = appendString(b, st.customer)
	b = append(b, `,"customer_email":null,"customer_name":null,"default_payment_method":null,"default_source":null,"description":null,"discounts":[],"due_date":null,"effective_at":`...)
	b = appendTime(b, st.finalizedAt)
	b = append(b, `,"hosted_invoice_url":null,"invoice_pdf":null,"last_finalization_error":null,"lines":{"object":"list","data":[],"has_more":false,"url":`...)
	b = appendStrings(b, "/v1/invoices/", st.id, "/lines")
	b = append(b, `},"livemode":false,"metadata":`...)
	b = appendMetadata(b, st.metadata)
	b = append(b, `,"next_payment_attempt":null,"number":null,"on_behalf_of":null,"parent":`...)
	if st.subscription == "" {
		b = append(b, "null"...)
	} else {
		parent, _ := e.field("parent")
		details, _ := parent.field("subscription_details")
		b = append(b, `{"quote_details":null,"subscription_details":{"metadata":{},"subscription":`...)
		b = details.appendRef(b, "subscription", st.subscription, func(b []byte, sub expander) []byte {
			return appendSubscription(b, &e.s.subs[st.subscription].subState, sub)
		})
		b = append(b, `},"type":"subscription_details"}`...)
	}
	b = append(b, `,"period_end":`...)
	b = strconv.AppendInt(b, st.created, 10)
	b = append(b, `,"period_start":`...)
	b = strconv.AppendInt(b, st.created, 10)
	b = append(b, `,"status":`...)
	b = appendString(b, string(st.status))
	b = append(b, `,"status_transitions":{"finalized_at":`...)
	b = appendTime(b, st.finalizedAt)
	b = append(b, `,"marked_uncollectible_at":`...)
	b = appendTime(b, st.uncollectibleAt)
	b = append(b, `,"paid_at":`...)
	b = appendTime(b, st.paidAt)
	b = append(b, `,"voided_at":`...)
	b = appendTime(b, st.voidedAt)
	b = append(b, `},"subtotal":`...)
	b = strconv.AppendInt(b, st.amountDue, 10)
	b = append(b, `,"test_clock":null,"total":`...)
	b = strconv.AppendInt(b, st.amountDue, 10)
	b = append(b, `,"webhooks_delivered_at":null}`...)
	return b
}

func (st invState) appendJSON(b []byte) []byte { return appendInvoice(b, &st, expander{}) }
