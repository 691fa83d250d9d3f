package retry

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"io"
	"net/http"
	"strings"
)

// Scope is what a throttled answer limits: the service says which of its scalability
// targets a request met ("Scalability and performance targets for Table storage": about
// 2,000 entities/s per partition, 20,000 per account), and each calls for a different
// answer from the client. A busy partition slows only the requests to that partition; the
// account's limit slows every request of the client.
type Scope int

const (
	// ScopeNone is an answer that is not throttling.
	ScopeNone Scope = iota
	// ScopePartition is a 503 ServerBusy whose message is "The server is busy.": the
	// partition server of the request's partition is over its target.
	ScopePartition
	// ScopeAccount is a 503 ServerBusy whose message says the account is over a limit
	// ("Operations per second is over the account limit.", and the ingress and egress
	// ones), and every other throttled answer (429, or a 503 whose code or message is not
	// one of these): a throttled answer of unknown scope slows the whole client, the safe
	// side.
	ScopeAccount
)

// String returns "none", "partition" or "account".
func (s Scope) String() string {
	switch s {
	case ScopePartition:
		return "partition"
	case ScopeAccount:
		return "account"
	}
	return "none"
}

// The texts that tell the scopes apart. The service's message is followed by
// "\nRequestId:...\nTime:..." and its case is not promised: they are matched as
// lowercase substrings.
const (
	partitionBusyText = "the server is busy."
	accountLimitText  = "over the account limit"
)

// ThrottleScope classifies an answer by its HTTP status, error code (x-ms-error-code,
// or the code of the error body) and message (the error body's message). It never
// returns ScopePartition for a code other than ServerBusy (or an empty code) or a status
// other than 503: only the service's own partition answer slows a partition alone.
func ThrottleScope(status int, code, message string) Scope {
	switch status {
	case http.StatusTooManyRequests:
		return ScopeAccount
	case http.StatusServiceUnavailable:
	default:
		return ScopeNone
	}
	m := strings.ToLower(message)
	switch {
	case code != "" && code != "ServerBusy":
		return ScopeAccount
	case strings.Contains(m, accountLimitText):
		return ScopeAccount
	case strings.Contains(m, partitionBusyText):
		return ScopePartition
	}
	return ScopeAccount
}

// maxErrorBody bounds what the Gate reads of a throttled answer's body to find its
// message (the service's are a few hundred bytes).
const maxErrorBody = 8 << 10

// responseScope classifies resp, reading the start of the body of a 503 and putting it
// back, so that the caller reads the whole body as the service sent it.
func responseScope(resp *http.Response) Scope {
	if resp.StatusCode != http.StatusServiceUnavailable {
		return ThrottleScope(resp.StatusCode, "", "")
	}
	code := resp.Header.Get("x-ms-error-code")
	var head []byte
	if resp.Body != nil && resp.Body != http.NoBody {
		head, _ = io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		resp.Body = struct {
			io.Reader
			io.Closer
		}{io.MultiReader(bytes.NewReader(head), resp.Body), resp.Body}
	}
	bodyCode, message := errorBody(head)
	if code == "" {
		code = bodyCode
	}
	return ThrottleScope(resp.StatusCode, code, message)
}

// errorBody returns the code and message of a storage error body: the table service's
// JSON ({"odata.error":{"code":..,"message":{"value":..}}}), the XML of the queue and blob
// services (<Error><Code>..</Code><Message>..</Message></Error>), or, for anything else,
// no code and the text itself.
func errorBody(b []byte) (code, message string) {
	var j struct {
		OData struct {
			Code    string `json:"code"`
			Message struct {
				Value string `json:"value"`
			} `json:"message"`
		} `json:"odata.error"`
	}
	if json.Unmarshal(b, &j) == nil && (j.OData.Code != "" || j.OData.Message.Value != "") {
		return j.OData.Code, j.OData.Message.Value
	}
	var x struct {
		Code    string `xml:"Code"`
		Message string `xml:"Message"`
	}
	if xml.Unmarshal(b, &x) == nil && (x.Code != "" || x.Message != "") {
		return x.Code, x.Message
	}
	return "", string(b)
}

type partitionKey struct{}

// WithPartition returns ctx marked with the partition its requests address, for the Gate:
// a busy partition's answers then slow that partition only, not the whole client.
// Schedule marks each task's context. A partition's own rate is learnt from its accepted
// answers, which measure it only while its requests in flight are few: mark only
// requests whose concurrency per partition is bounded, as Schedule's are. A request
// without the mark is judged at the client's scope, whatever its answer says.
func WithPartition(ctx context.Context, partition string) context.Context {
	return context.WithValue(ctx, partitionKey{}, partition)
}

// PartitionOf returns the partition WithPartition marked ctx with, and whether it did.
func PartitionOf(ctx context.Context) (string, bool) {
	p, ok := ctx.Value(partitionKey{}).(string)
	return p, ok
}
