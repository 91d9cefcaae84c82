package stripetest

import (
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/stripe/stripe-go/v82"
)

// Account is a Connect account of the platform, in the fields the project reads.
//
// An account exists once AddAccount stores it, or once an object is added for it (an intent,
// subscription, invoice or Checkout Session with its Account): such an implicit account is a
// standard account that has finished onboarding, with charges and payouts enabled. A request
// whose Stripe-Account header names an account the platform does not have, or one that was
// disconnected, is refused as Stripe refuses it (see DisconnectAccount).
type Account struct {
	// ID is the account's id; empty means a generated one, "acct_" and 16 alphanumeric
	// characters.
	ID string
	// Type is standard, express or custom; empty means standard.
	Type stripe.AccountType
	// Created is when the account was created; zero means Options.Now.
	Created time.Time
	// Country is a two-letter code; empty means "US".
	Country string
	// DefaultCurrency is the currency the account settles in (its default_currency), in which
	// its balance transactions and payouts are; empty means "usd".
	DefaultCurrency string
	// ChargesEnabled, PayoutsEnabled and DetailsSubmitted are the account's onboarding state;
	// all false, the zero value, is an account that has just been created.
	ChargesEnabled, PayoutsEnabled, DetailsSubmitted bool
	// DisabledReason is requirements.disabled_reason, such as "requirements.past_due" or
	// "rejected.fraud"; empty means null.
	DisabledReason string
	// Metadata is copied when the account is stored.
	Metadata map[string]string
}

// acctState is an account as stored, copied into events as snapshots.
type acctState struct {
	id               string
	typ              stripe.AccountType
	created          int64
	country          string
	defaultCurrency  string
	chargesEnabled   bool
	payoutsEnabled   bool
	detailsSubmitted bool
	disabledReason   string
	metadata         map[string]string
}

// account is a stored Account.
type account struct {
	acctState
	seq          uint64
	disconnected bool // the platform has lost access: the account is gone for it
}

func (a *account) sortKey() sortKey { return sortKey{a.created, a.seq} }

// knownAccountTypes are the account types the fake accepts.
var knownAccountTypes = map[stripe.AccountType]bool{
	stripe.AccountTypeStandard: true,
	stripe.AccountTypeExpress:  true,
	stripe.AccountTypeCustom:   true,
}

// AddAccount stores a connected account of the platform and returns its id. It records no
// event: Stripe sends the platform none for an account it creates. It panics, as a broken
// fixture should, if the id is already used, does not start with acct_, or the type is
// unknown.
func (s *Server) AddAccount(a Account) string {
	return s.AddAccounts([]Account{a})[0]
}

// AddAccounts stores many accounts at once, like AddAccount, and returns their ids in order.
func (s *Server) AddAccounts(as []Account) []string {
	states := make([]acctState, len(as))
	for i, a := range as {
		st, err := s.accountState(a)
		if err != nil {
			panic(err.Error())
		}
		states[i] = st
	}
	ids := make([]string, len(as))
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, st := range states {
		if st.id == "" {
			for st.id == "" || s.accounts[st.id] != nil {
				st.id = randomID("acct_", 16) // Stripe's account ids are shorter than others
			}
		} else if _, dup := s.accounts[st.id]; dup {
			panic("stripetest: duplicate account id " + st.id)
		}
		s.storeAccount(st)
		ids[i] = st.id
	}
	return ids
}

// accountState checks a and fills in its defaults; the id stays empty when a has none.
func (s *Server) accountState(a Account) (acctState, error) {
	st := acctState{
		id:               a.ID,
		typ:              a.Type,
		created:          s.now().Unix(),
		country:          a.Country,
		defaultCurrency:  strings.ToLower(a.DefaultCurrency),
		chargesEnabled:   a.ChargesEnabled,
		payoutsEnabled:   a.PayoutsEnabled,
		detailsSubmitted: a.DetailsSubmitted,
		disabledReason:   a.DisabledReason,
	}
	if st.id != "" && !isAccountID(st.id) {
		return st, fmt.Errorf("stripetest: account id %q does not start with acct_", st.id)
	}
	if st.typ == "" {
		st.typ = stripe.AccountTypeStandard
	}
	if !knownAccountTypes[st.typ] {
		return st, fmt.Errorf("stripetest: unknown account type %q", st.typ)
	}
	if !a.Created.IsZero() {
		st.created = a.Created.Unix()
	}
	if st.country == "" {
		st.country = "US"
	}
	if st.defaultCurrency == "" {
		st.defaultCurrency = "usd"
	}
	if len(a.Metadata) > 0 {
		st.metadata = maps.Clone(a.Metadata)
	}
	return st, nil
}

func isAccountID(id string) bool { return len(id) > len("acct_") && id[:len("acct_")] == "acct_" }

// storeAccount adds an account; the caller holds s.mu.
func (s *Server) storeAccount(st acctState) *account {
	s.seq++
	a := &account{acctState: st, seq: s.seq}
	s.accounts[a.id] = a
	s.accountsIdx.add(a)
	return a
}

// knowAccount creates the implicit account of an object added for a connected account that
// the server does not have yet; the caller holds s.mu.
func (s *Server) knowAccount(id string) {
	if id == "" || s.accounts[id] != nil {
		return
	}
	s.storeAccount(acctState{
		id: id, typ: stripe.AccountTypeStandard, created: s.now().Unix(), country: "US", defaultCurrency: "usd",
		chargesEnabled: true, payoutsEnabled: true, detailsSubmitted: true,
	})
}

// Account returns the account with the id, and whether the server has it (a disconnected
// account included).
func (s *Server) Account(id string) (Account, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a, ok := s.accounts[id]
	if !ok {
		return Account{}, false
	}
	return Account{
		ID:               a.id,
		Type:             a.typ,
		Created:          unixTime(a.created),
		Country:          a.country,
		DefaultCurrency:  a.defaultCurrency,
		ChargesEnabled:   a.chargesEnabled,
		PayoutsEnabled:   a.payoutsEnabled,
		DetailsSubmitted: a.detailsSubmitted,
		DisabledReason:   a.disabledReason,
		Metadata:         maps.Clone(a.metadata),
	}, true
}

// UpdateAccount replaces the state of the account a.ID with a's (type, country, onboarding
// flags, disabled reason, metadata; a zero Created keeps the account's), as Stripe changes
// an account during onboarding and verification, and records account.updated at Options.Now
// as an event of that account (a Connect event: GET /v1/events with its Stripe-Account header
// lists it). Read the account with Account, change it, and pass it back. It fails for an
// unknown or disconnected account or an unknown type.
func (s *Server) UpdateAccount(a Account) error {
	created := a.Created
	st, err := s.accountState(a)
	if err != nil {
		return err
	}
	at := s.now().Unix()
	s.mu.Lock()
	defer s.mu.Unlock()
	old, ok := s.accounts[a.ID]
	if !ok || old.disconnected {
		return errors.New("stripetest: no such account: " + a.ID)
	}
	if created.IsZero() {
		st.created = old.created
	}
	if st.created != old.created {
		return errors.New("stripetest: an account's created time cannot change: " + a.ID)
	}
	old.acctState = st
	s.addEvent("account.updated", at, old.id, old.acctState)
	return nil
}

// DisconnectAccount takes the platform's access to an account away, as when a standard account
// disconnects from the platform or the platform deletes an account it controls. From then on
// the account is missing from GET /v1/accounts, and GET /v1/accounts/{id} or any request
// with the account in its Stripe-Account header is refused as Stripe refuses an account the
// platform cannot access: 403 account_invalid, "The provided key ... does not have access to
// account '...' (or that account does not exist)". Stripe does not tell an account that never
// existed from one that is gone, and neither does the fake. The account's objects and events
// stay stored, and Account still returns it. No event is recorded: Stripe tells the platform
// by webhook (account.application.deauthorized), which the fake does not model. It fails for
// an unknown account.
func (s *Server) DisconnectAccount(id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	a, ok := s.accounts[id]
	if !ok {
		return errors.New("stripetest: no such account: " + id)
	}
	a.disconnected = true
	return nil
}

// accountInvalid is Stripe's answer to a request for an account the platform cannot access
// or that does not exist, in the Stripe-Account header or the path of GET /v1/accounts/{id}.
func (s *Server) accountInvalid(id string) *failure {
	return &failure{http.StatusForbidden, apiError{
		Code:    "account_invalid",
		DocURL:  docURL("account_invalid"),
		Message: "The provided key '" + maskKey(s.key) + "' does not have access to account '" + id + "' (or that account does not exist). Application access may have been revoked.",
		Type:    errInvalidRequest,
	}}
}

// checkAccount refuses a request whose Stripe-Account header names an account the platform
// does not have.
func (s *Server) checkAccount(header string) *failure {
	if header == "" {
		return nil
	}
	s.mu.Lock()
	a, ok := s.accounts[header]
	s.mu.Unlock()
	if !ok || a.disconnected {
		return s.accountInvalid(header)
	}
	return nil
}

// retrieveAccount serves GET /v1/accounts/{id}: the platform reads any of its accounts, and an
// account may read itself.
func (s *Server) retrieveAccount(b []byte, header, id string, q url.Values) ([]byte, *failure) {
	for param := range q {
		if !isArrayParam(param, "expand") {
			return b, unknownParameter(param)
		}
	}
	if _, f := parseExpand(q, kindAccount, false); f != nil {
		return b, f
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	a, ok := s.accounts[id]
	if !ok || a.disconnected || (header != "" && header != id) {
		return b, s.accountInvalid(id)
	}
	return appendAccount(b, &a.acctState), nil
}

// listAccounts serves GET /v1/accounts, the platform's connected accounts, newest first. Only
// the platform lists accounts: the fake refuses the list with a Stripe-Account header, as
// Stripe refuses requests about other accounts from an account that is not a platform.
func (s *Server) listAccounts(b []byte, header string, q url.Values) ([]byte, *failure) {
	lq, f := parseList(q, nil)
	if f != nil {
		return b, f
	}
	if _, f := parseExpand(q, kindAccount, true); f != nil {
		return b, f
	}
	if header != "" {
		return b, &failure{http.StatusBadRequest, apiError{
			Message: "Only Stripe Connect platforms can work with other accounts. If you specified a client_id parameter, make sure it's correct. If you need to setup a Stripe Connect platform, you can do so at https://dashboard.stripe.com/account/applications/settings.",
			Type:    errInvalidRequest,
		}}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	page, hasMore, f := pageOf(&s.accountsIdx, lq, "account", func(id string) (*account, bool) {
		a, ok := s.accounts[id]
		return a, ok && !a.disconnected
	}, func(a *account) bool { return !a.disconnected })
	if f != nil {
		return b, f
	}
	return appendList(b, "/v1/accounts", page, hasMore, func(b []byte, a *account) []byte {
		return appendAccount(b, &a.acctState)
	}), nil
}

// appendAccount appends an Account as Stripe renders it to its platform, in the fields
// stripe.Account decodes; fields the fake does not model are null or empty.
func appendAccount(b []byte, st *acctState) []byte {
	b = append(b, `{"id":`...)
	b = appendString(b, st.id)
	b = append(b, `,"object":"account","business_profile":null,"business_type":null,"capabilities":{},"charges_enabled":`...)
	b = strconv.AppendBool(b, st.chargesEnabled)
	b = append(b, `,"controller":null,"country":`...)
	b = appendString(b, st.country)
	b = append(b, `,"created":`...)
	b = strconv.AppendInt(b, st.created, 10)
	b = append(b, `,"default_currency":`...)
	b = appendString(b, st.defaultCurrency)
	b = append(b, `,"details_submitted":`...)
	b = strconv.AppendBool(b, st.detailsSubmitted)
	b = append(b, `,"email":null,"external_accounts":{"object":"list","data":[],"has_more":false,"url":`...)
	b = appendStrings(b, "/v1/accounts/", st.id, "/external_accounts")
	b = append(b, `},"future_requirements":null,"metadata":`...)
	b = appendMetadata(b, st.metadata)
	b = append(b, `,"payouts_enabled":`...)
	b = strconv.AppendBool(b, st.payoutsEnabled)
	b = append(b, `,"requirements":{"alternatives":[],"current_deadline":null,"currently_due":[],"disabled_reason":`...)
	if st.disabledReason != "" {
		b = appendString(b, st.disabledReason)
	} else {
		b = append(b, "null"...)
	}
	b = append(b, `,"errors":[],"eventually_due":[],"past_due":[],"pending_verification":[]},"settings":null,"tos_acceptance":null,"type":`...)
	b = appendString(b, string(st.typ))
	return append(b, '}')
}

func (st acctState) appendJSON(b []byte) []byte { return appendAccount(b, &st) }
