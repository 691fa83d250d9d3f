package faultproxy

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"time"
)

// Rule injects a fault into the requests it matches. See the package documentation for the
// order of evaluation.
type Rule struct {
	// Name is recorded in RequestInfo.Fired of every request the rule fires on.
	Name string
	// Match selects the requests the rule applies to; nil selects every request. It may read
	// r.Body (each call gets a fresh reader) and may call the proxy's methods, but must not
	// keep r.
	Match func(r *http.Request) bool
	// Probability is the chance, in (0, 1], that the rule fires on a matching request; 0
	// means always.
	Probability float64
	// Times is how many times the rule fires at most; 0 means no limit.
	Times int
	// Action is what happens when the rule fires.
	Action Action
	// pause is the Pause whose rule this is (PauseAt), nil for other rules.
	pause *Pause
}

type actionKind int

const (
	actForward actionKind = iota // the zero Action: forward untouched
	actRespond
	actDelay
	actDropBefore
	actDropAfter
)

// Action is what a firing Rule does to the request; build one with Respond, Delay,
// DropBeforeForward or DropAfterForward. The zero Action forwards the request untouched
// (a rule with it only marks requests in RequestInfo.Fired).
type Action struct {
	kind   actionKind
	status int
	code   string
	delay  time.Duration
}

// String describes the action, for test failure messages.
func (a Action) String() string {
	switch a.kind {
	case actRespond:
		return fmt.Sprintf("Respond(%d, %s)", a.status, a.code)
	case actDelay:
		return fmt.Sprintf("Delay(%s)", a.delay)
	case actDropBefore:
		return "DropBeforeForward"
	case actDropAfter:
		return "DropAfterForward"
	}
	return "Forward"
}

// Respond answers the request itself, without forwarding it, with an Azure-style error: the
// header x-ms-error-code: code and a body the SDKs parse, JSON
// {"odata.error":{"code":...,"message":{"lang":"en-US","value":...}}} for the Table service
// and XML <Error><Code>...</Code><Message>...</Message></Error> for Queue and Blob. The
// service is told apart by the request (OData headers or a JSON Accept/Content-Type mean
// Table).
func Respond(status int, code string) Action {
	return Action{kind: actRespond, status: status, code: code}
}

// Delay waits d (or until the client gives up), then forwards the request as if no rule had
// fired. It makes client timeouts and slow pages reproducible.
func Delay(d time.Duration) Action { return Action{kind: actDelay, delay: d} }

// DropBeforeForward closes the client connection without forwarding the request and without
// a response: the service never sees it. See the package documentation about net/http
// resending idempotent requests.
func DropBeforeForward() Action { return Action{kind: actDropBefore} }

// DropAfterForward forwards the request, waits for the service's full response, discards
// it and closes the client connection: the write happened but the client gets an error.
func DropAfterForward() Action { return Action{kind: actDropAfter} }

// ruleState is a Rule and how often it fired.
type ruleState struct {
	Rule
	fired int
}

// AddRule appends r to the rules and returns a function that removes it again (safe to call
// more than once, and after ClearRules).
func (p *Proxy) AddRule(r Rule) (remove func()) {
	rs := &ruleState{Rule: r}
	p.mu.Lock()
	p.rules = append(p.rules, rs)
	p.mu.Unlock()
	return func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		for i, x := range p.rules {
			if x == rs {
				p.rules = append(p.rules[:i:i], p.rules[i+1:]...)
				return
			}
		}
	}
}

// ClearRules removes every rule.
func (p *Proxy) ClearRules() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.rules = nil
}

// Fired returns how many times the rules named name have fired since they were added.
func (p *Proxy) Fired(name string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, rs := range p.rules {
		if rs.Name == name {
			n += rs.fired
		}
	}
	return n
}

// pickRule returns the rule that fires on r, or nil. Matchers run outside the lock (they are
// the caller's code and may call the proxy); the Times and Probability checks, and the
// count, run under it, so that Times holds under concurrency.
func (p *Proxy) pickRule(r *http.Request, body []byte) *Rule {
	p.mu.Lock()
	rules := append([]*ruleState(nil), p.rules...)
	p.mu.Unlock()
	for _, rs := range rules {
		if rs.Match != nil {
			r.Body = io.NopCloser(bytes.NewReader(body))
			if !rs.Match(r) {
				continue
			}
		}
		p.mu.Lock()
		fire := rs.Times <= 0 || rs.fired < rs.Times
		if fire && rs.Probability > 0 && rs.Probability < 1 {
			fire = p.rng.Float64() < rs.Probability
		}
		if fire {
			rs.fired++
		}
		p.mu.Unlock()
		if fire {
			rule := rs.Rule
			return &rule
		}
	}
	return nil
}

// requestSeq numbers synthesized responses' request ids.
var requestSeq atomic.Uint64

// writeError writes an Azure-style error response (see Respond).
func writeError(w http.ResponseWriter, r *http.Request, status int, code string) {
	id := fmt.Sprintf("00000000-0000-4000-8000-%012x", requestSeq.Add(1))
	message := errorMessage(code) + "\nRequestId:" + id + "\nTime:" + time.Now().UTC().Format("2006-01-02T15:04:05.0000000Z")
	var body []byte
	h := w.Header()
	if isTableRequest(r) {
		type msg struct {
			Lang  string `json:"lang"`
			Value string `json:"value"`
		}
		type odataError struct {
			Code    string `json:"code"`
			Message msg    `json:"message"`
		}
		body, _ = json.Marshal(map[string]odataError{"odata.error": {Code: code, Message: msg{Lang: "en-US", Value: message}}})
		h.Set("Content-Type", "application/json;odata=minimalmetadata;streaming=true;charset=utf-8")
	} else {
		var b bytes.Buffer
		b.WriteString(xml.Header)
		b.WriteString("<Error><Code>")
		_ = xml.EscapeText(&b, []byte(code))
		b.WriteString("</Code><Message>")
		_ = xml.EscapeText(&b, []byte(message))
		b.WriteString("</Message></Error>")
		body = b.Bytes()
		h.Set("Content-Type", "application/xml")
	}
	h.Set("x-ms-error-code", code)
	h.Set("x-ms-request-id", id)
	h.Set("x-ms-version", "2019-02-02")
	if r.Method == http.MethodHead || !bodyAllowed(status) {
		w.WriteHeader(status)
		return
	}
	h.Set("Content-Length", fmt.Sprint(len(body)))
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// errorMessage is the service's message for the codes tests inject most, so that logs look
// like the real thing.
func errorMessage(code string) string {
	switch code {
	case "ServerBusy":
		return "The server is busy."
	case "OperationTimedOut":
		return "Operation could not be completed within the specified time."
	case "InternalError":
		return "The server encountered an internal error. Please retry the request."
	case "TableBeingDeleted":
		return "The specified table is being deleted. Try operation later."
	case "TooManyRequests":
		return "The request rate is too large."
	}
	return "Fault injected by faultproxy: " + code + "."
}

// isTableRequest tells a Table service request from a Queue or Blob one: the Table API
// speaks OData JSON; the others XML.
func isTableRequest(r *http.Request) bool {
	if r.Header.Get("DataServiceVersion") != "" || r.Header.Get("MaxDataServiceVersion") != "" {
		return true
	}
	if strings.Contains(r.Header.Get("Accept"), "json") || strings.Contains(r.Header.Get("Content-Type"), "json") {
		return true
	}
	seg := lastSegment(r.URL.Path)
	return seg == "$batch" || strings.HasPrefix(seg, "Tables")
}
