package stripetest

import (
	"fmt"
	"net/http"
	"strings"
)

// Stripe error types the fake answers with.
const (
	errInvalidRequest = "invalid_request_error"
	errAPI            = "api_error"
)

// apiError is the body of a Stripe error answer, {"error": {...}}. Field names follow Stripe's
// API reference and stripe-go's stripe.Error, which decodes it.
type apiError struct {
	Code    string `json:"code,omitempty"`
	DocURL  string `json:"doc_url,omitempty"`
	Message string `json:"message"`
	Param   string `json:"param,omitempty"`
	Type    string `json:"type"`
}

type errorBody struct {
	Error apiError `json:"error"`
}

// failure is an error answer: its HTTP status and body.
type failure struct {
	status int
	err    apiError
}

// docURL is where Stripe documents an error code; Stripe's answers carry it with every code.
func docURL(code string) string {
	if code == "" {
		return ""
	}
	return "https://stripe.com/docs/error-codes/" + strings.ReplaceAll(code, "_", "-")
}

// invalidRequest is a 400 invalid_request_error about one parameter.
func invalidRequest(param, format string, args ...any) *failure {
	return &failure{http.StatusBadRequest, apiError{Message: fmt.Sprintf(format, args...), Param: param, Type: errInvalidRequest}}
}

// unknownParameter is Stripe's answer to a query parameter the endpoint does not take.
func unknownParameter(param string) *failure {
	return &failure{http.StatusBadRequest, apiError{
		Code:    "parameter_unknown",
		DocURL:  docURL("parameter_unknown"),
		Message: "Received unknown parameter: " + param,
		Param:   param,
		Type:    errInvalidRequest,
	}}
}

// noSuch is Stripe's answer for an id that does not exist (or belongs to another account):
// 404 for the object in the path, 400 for a cursor parameter.
func noSuch(status int, object, id, param string) *failure {
	return &failure{status, apiError{
		Code:    "resource_missing",
		DocURL:  docURL("resource_missing"),
		Message: fmt.Sprintf("No such %s: '%s'", object, id),
		Param:   param,
		Type:    errInvalidRequest,
	}}
}

// maskKey hides a key the way Stripe's 401 message does: the sk_test_ style prefix and the
// last four characters stay, the rest becomes stars. Short keys are hidden completely so that
// the message never reveals a whole key.
func maskKey(key string) string {
	prefix := ""
	if len(key) > 8 && key[2] == '_' && (key[3:8] == "test_" || key[3:8] == "live_") {
		prefix, key = key[:8], key[8:]
	}
	if len(key) < 8 {
		return prefix + strings.Repeat("*", len(key))
	}
	return prefix + strings.Repeat("*", len(key)-4) + key[len(key)-4:]
}
