package faultproxy

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultSeed seeds the generator behind Rule.Probability until SetSeed is called.
const DefaultSeed = 1

// Proxy is a loopback reverse proxy with fault injection, request counting and emulation of
// real Azure behaviours. Its methods are safe for concurrent use.
type Proxy struct {
	target    *url.URL
	url       string
	listener  net.Listener
	server    *http.Server
	transport *http.Transport

	mu        sync.Mutex
	rules     []*ruleState
	rng       *rand.Rand
	requests  []RequestInfo
	deleting  time.Duration        // EmulateTableBeingDeleted window; 0 = off
	deletedAt map[string]time.Time // lowercased table name -> time of its successful DELETE
	pageMax   int                  // EmulatePaging page size; 0 = off
	emptyPage bool                 // EmulatePaging empty first page

	throttle atomic.Pointer[Throttle] // EmulateThrottling model (throttle.go); nil = off
	inflight atomic.Int64             // requests in ServeHTTP (WaitIdle)
}

// WaitIdle blocks until no request is being handled by the proxy (held, delayed,
// forwarded or answered), or ctx ends (then it returns ctx.Err()): the way to know that a
// request forwarded after its client gave up (Pause.Detach) has reached the service and
// come back. It polls every millisecond.
func (p *Proxy) WaitIdle(ctx context.Context) error {
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for p.inflight.Load() != 0 {
		select {
		case <-tick.C:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// RequestInfo records one request that reached the proxy.
type RequestInfo struct {
	// Method is the HTTP method.
	Method string
	// Path is the decoded URL path, e.g. /devstoreaccount1/mytable().
	Path string
	// RawQuery is the query string as the client sent it (still encoded).
	RawQuery string
	// Fired names the rule that fired on the request, "TableBeingDeleted" when that emulation
	// answered it, or "" when it was forwarded untouched (paging emulation included).
	Fired string
}

// New starts a proxy for target, the scheme and host of a service endpoint without a path
// (e.g. http://127.0.0.1:10002), listening on a free port of 127.0.0.1. Stop it with Close.
// It returns an error if target is not such a URL or no port can be bound.
func New(target string) (*Proxy, error) {
	u, err := url.Parse(target)
	if err != nil {
		return nil, fmt.Errorf("faultproxy: target %q: %w", target, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" {
		return nil, fmt.Errorf("faultproxy: target %q: want scheme://host:port without a path", target)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("faultproxy: %w", err)
	}
	p := &Proxy{
		target:    &url.URL{Scheme: u.Scheme, Host: u.Host},
		url:       "http://" + ln.Addr().String(),
		listener:  ln,
		rng:       rand.New(rand.NewSource(DefaultSeed)),
		deletedAt: map[string]time.Time{},
		transport: &http.Transport{
			Proxy:               nil, // never an HTTP_PROXY from the environment
			DialContext:         (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
			DisableCompression:  true, // pass Accept-Encoding and bodies through untouched
			MaxIdleConnsPerHost: 64,
			IdleConnTimeout:     30 * time.Second,
		},
	}
	p.server = &http.Server{Handler: p, ReadHeaderTimeout: 30 * time.Second}
	go func() { _ = p.server.Serve(ln) }()
	return p, nil
}

// URL returns the proxy's base URL, http://127.0.0.1:PORT. Paths are passed through
// unchanged, so the endpoint of a path-style account is URL() + "/" + account.
func (p *Proxy) URL() string { return p.url }

// Close stops listening, closes open client connections and idle connections to the target.
// Requests in flight fail.
func (p *Proxy) Close() error {
	err := p.server.Close()
	p.transport.CloseIdleConnections()
	if errors.Is(err, net.ErrClosed) {
		err = nil
	}
	return err
}

// SetSeed reseeds the generator behind Rule.Probability, for reproducible runs.
func (p *Proxy) SetSeed(seed int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.rng = rand.New(rand.NewSource(seed))
}

// Requests returns a copy of the requests recorded since New or the last Reset, in the order
// they arrived.
func (p *Proxy) Requests() []RequestInfo {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]RequestInfo(nil), p.requests...)
}

// Count returns how many requests were recorded since New or the last Reset.
func (p *Proxy) Count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.requests)
}

// CountMatching returns how many recorded requests satisfy keep.
func (p *Proxy) CountMatching(keep func(RequestInfo) bool) int {
	n := 0
	for _, r := range p.Requests() {
		if keep(r) {
			n++
		}
	}
	return n
}

// Reset forgets the recorded requests. Rules, their Times counters and emulations are kept.
func (p *Proxy) Reset() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.requests = nil
}

// EmulateTableBeingDeleted makes the proxy answer a create of a table (POST /Tables with
// {"TableName": name}) with 409 TableBeingDeleted when a DELETE of the same name (compared
// case-insensitively) succeeded through this proxy less than d ago, as real Azure does for
// 40 s and more. Only deletions made while the emulation is on count. d <= 0 turns it off.
func (p *Proxy) EmulateTableBeingDeleted(d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if d < 0 {
		d = 0
	}
	p.deleting = d
	if d == 0 {
		clear(p.deletedAt)
	}
}

// EmulatePaging serves entity queries (GET /<table>()) in pages of at most maxPerPage
// entities (or the query's $top, if smaller) that carry the continuation headers
// x-ms-continuation-NextPartitionKey and x-ms-continuation-NextRowKey while more entities
// match, as Azure may return short pages at any time. With emptyFirst, the first page of
// every query (a request without a continuation) is empty but carries a continuation that
// points at the first entity the query returns, as Azure may do at the 5 s limit; a query
// that matches nothing gets its real, empty and final, page.
//
// The short pages come from lowering $top on the forwarded request, so they work against
// any service. The empty page carries a token in Azurite's format (the base64 of the UTF-8
// PartitionKey and RowKey of the next entity to return, see paging.go), so it works against
// Azurite only. maxPerPage <= 0 turns the emulation off.
func (p *Proxy) EmulatePaging(maxPerPage int, emptyFirst bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if maxPerPage <= 0 {
		maxPerPage, emptyFirst = 0, false
	}
	p.pageMax, p.emptyPage = maxPerPage, emptyFirst
}

// ServeHTTP implements http.Handler: it records the request, applies the first rule that
// fires, and otherwise forwards it (through the emulations) to the target.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.inflight.Add(1)
	defer p.inflight.Add(-1)
	body, err := io.ReadAll(r.Body)
	if err != nil {
		// The client went away mid-body; there is no one to answer.
		return
	}
	_ = r.Body.Close()
	rule := p.pickRule(r, body)
	if rule != nil && rule.pause != nil && rule.pause.detached(r) {
		r = r.WithContext(context.WithoutCancel(r.Context()))
	}
	var busy *refusal // the throughput model's answer (throttle.go), for forwarded requests
	if rule == nil || rule.Action.kind == actDelay || rule.Action.kind == actForward {
		var done func()
		busy, done = p.throttled(r, body)
		defer done()
	}

	p.mu.Lock()
	info := RequestInfo{Method: r.Method, Path: r.URL.Path, RawQuery: r.URL.RawQuery}
	beingDeleted := false
	if rule != nil {
		info.Fired = rule.Name
	}
	if rule == nil || rule.Action.kind == actDelay {
		if beingDeleted = p.tableBeingDeletedLocked(r, body); beingDeleted {
			info.Fired = "TableBeingDeleted"
		}
	}
	if busy != nil {
		info.Fired = ThrottledFired
	}
	p.requests = append(p.requests, info)
	pageMax, emptyFirst := p.pageMax, p.emptyPage
	p.mu.Unlock()

	if rule != nil {
		switch a := rule.Action; a.kind {
		case actRespond:
			writeError(w, r, a.status, a.code)
			return
		case actDropBefore:
			dropConnection(w)
			return
		case actDropAfter:
			if resp, err := p.roundTrip(r, body, r.URL.RawQuery); err == nil {
				_ = resp.Body.Close()
			}
			dropConnection(w)
			return
		case actDelay:
			timer := time.NewTimer(a.delay)
			select {
			case <-timer.C:
			case <-r.Context().Done():
				timer.Stop()
				return
			}
		}
	}
	if busy != nil {
		writeThrottled(w, r, busy)
		return
	}
	if beingDeleted {
		writeError(w, r, http.StatusConflict, "TableBeingDeleted")
		return
	}
	if pageMax > 0 && isListEntities(r) {
		p.servePage(w, r, body, pageMax, emptyFirst)
		return
	}
	p.forward(w, r, body, r.URL.RawQuery)
}

// forward sends the request to the target with rawQuery and relays the response.
func (p *Proxy) forward(w http.ResponseWriter, r *http.Request, body []byte, rawQuery string) {
	resp, err := p.roundTrip(r, body, rawQuery)
	if err != nil {
		if r.Context().Err() == nil {
			http.Error(w, "faultproxy: "+err.Error(), http.StatusBadGateway)
		}
		return
	}
	respBody, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if err != nil {
		dropConnection(w)
		return
	}
	relay(w, r, resp, respBody)
}

// roundTrip sends a copy of r with body and rawQuery to the target and notes what the
// emulations must remember. The caller closes the response body.
func (p *Proxy) roundTrip(r *http.Request, body []byte, rawQuery string) (*http.Response, error) {
	path := r.URL.EscapedPath()
	if path == "" {
		path = "/"
	}
	u, err := url.Parse(p.target.Scheme + "://" + p.target.Host + path)
	if err != nil {
		return nil, err
	}
	u.RawQuery = rawQuery
	out, err := http.NewRequestWithContext(r.Context(), r.Method, u.String(), bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	out.URL = u // keep the client's path encoding (quotes and percents in keys) verbatim
	out.Header = r.Header.Clone()
	removeHopByHop(out.Header)
	out.ContentLength = int64(len(body))
	if len(body) == 0 {
		out.Body = http.NoBody
	}
	resp, err := p.transport.RoundTrip(out)
	if err != nil {
		return nil, err
	}
	if r.Method == http.MethodDelete && resp.StatusCode == http.StatusNoContent {
		if name, ok := deletedTableName(r); ok {
			p.noteTableDeleted(name)
		}
	}
	return resp, nil
}

// relay writes resp, whose body has been read into body, to the client.
func relay(w http.ResponseWriter, r *http.Request, resp *http.Response, body []byte) {
	h := w.Header()
	for k, vs := range resp.Header {
		h[k] = append([]string(nil), vs...)
	}
	removeHopByHop(h)
	if r.Method != http.MethodHead {
		// A HEAD response keeps the service's Content-Length (a blob's size); any other
		// response is re-framed from the buffered body.
		h.Del("Content-Length")
		if bodyAllowed(resp.StatusCode) {
			h.Set("Content-Length", fmt.Sprint(len(body)))
		}
	}
	w.WriteHeader(resp.StatusCode)
	if r.Method != http.MethodHead && bodyAllowed(resp.StatusCode) {
		_, _ = w.Write(body)
	}
}

func bodyAllowed(status int) bool {
	return status >= 200 && status != http.StatusNoContent && status != http.StatusNotModified
}

// hopByHop are the headers a proxy must not pass on (RFC 9110, section 7.6.1).
var hopByHop = []string{"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate",
	"Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade"}

func removeHopByHop(h http.Header) {
	for _, f := range h.Values("Connection") {
		for _, name := range strings.Split(f, ",") {
			if name = strings.TrimSpace(name); name != "" {
				h.Del(name)
			}
		}
	}
	for _, name := range hopByHop {
		h.Del(name)
	}
}

// dropConnection closes the client connection without writing a response.
func dropConnection(w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		// Cannot happen on HTTP/1.1, the only protocol the proxy serves; abort the handler,
		// which makes net/http close the connection too.
		panic(http.ErrAbortHandler)
	}
	_ = conn.Close()
}
