package faultproxy

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"mime"
	"mime/multipart"
	"net/http"
	"strings"
	"sync"
	"time"
)

// The published scalability targets of Azure Table storage ("Scalability and performance
// targets for Table storage"; the design guide's "Designing a scalable partitioning
// strategy" reasons with them), for 1 KiB entities.
const (
	// PartitionTarget is the throughput of one table partition, in entities per second.
	PartitionTarget = 2000
	// AccountTarget is the throughput of one storage account, in entities per second.
	AccountTarget = 20000
)

// The messages of the service's 503 ServerBusy answers ("Common REST API error codes"):
// the one a busy partition server gives and the one of the account's operations limit.
const (
	PartitionBusyMessage = "The server is busy."
	AccountBusyMessage   = "Operations per second is over the account limit."
)

// ThrottledFired is RequestInfo.Fired of a request the throughput model refused.
const ThrottledFired = "Throttled"

// ThrottleOptions configures the throughput model of EmulateThrottling. nil means the
// defaults; in every field 0 means the default and -1 turns the setting off where noted.
type ThrottleOptions struct {
	// PartitionRate is the entities per second one partition serves. Defaults to
	// PartitionTarget (2,000). -1 turns the per-partition limit off.
	PartitionRate float64
	// PartitionBurst is how many entities an idle partition takes at once (the size of its
	// token bucket). Defaults to one second of PartitionRate.
	PartitionBurst float64
	// AccountRate is the entities per second the whole account (every partition of every
	// table behind the proxy) serves. Defaults to AccountTarget (20,000). -1 turns the
	// account limit off.
	AccountRate float64
	// AccountBurst is the size of the account's token bucket. Defaults to one second of
	// AccountRate.
	AccountBurst float64
	// PartitionOf maps a PartitionKey to the partition that serves it. Defaults to the
	// PartitionKey itself: every PartitionKey is its own partition, the most the service
	// can spread. Set it to model range partitions, where the service serves neighbouring
	// keys from one server (e.g. the first n characters of the key). An empty result
	// counts against the account only.
	PartitionOf func(partitionKey string) string
	// Now is the model's clock. Defaults to time.Now; tests of the model itself pass a
	// fake one.
	Now func() time.Time
}

func (o *ThrottleOptions) withDefaults() ThrottleOptions {
	var out ThrottleOptions
	if o != nil {
		out = *o
	}
	if out.PartitionRate == 0 {
		out.PartitionRate = PartitionTarget
	}
	if out.AccountRate == 0 {
		out.AccountRate = AccountTarget
	}
	if out.PartitionBurst == 0 {
		out.PartitionBurst = max(out.PartitionRate, 1)
	}
	if out.AccountBurst == 0 {
		out.AccountBurst = max(out.AccountRate, 1)
	}
	if out.PartitionOf == nil {
		out.PartitionOf = func(pk string) string { return pk }
	}
	if out.Now == nil {
		out.Now = time.Now
	}
	return out
}

func (o ThrottleOptions) validate() error {
	for _, f := range []struct {
		name string
		v    float64
		off  bool
	}{
		{"PartitionRate", o.PartitionRate, true}, {"AccountRate", o.AccountRate, true},
		{"PartitionBurst", o.PartitionBurst, false}, {"AccountBurst", o.AccountBurst, false},
	} {
		if math.IsNaN(f.v) || math.IsInf(f.v, 0) || (f.v <= 0 && !(f.off && f.v == -1)) {
			return fmt.Errorf("faultproxy: ThrottleOptions.%s must be positive (or -1: off where allowed), got %v", f.name, f.v)
		}
	}
	return nil
}

// Counts counts requests and the entities they carry.
type Counts struct {
	// AdmittedRequests and AdmittedEntities count what the model let through to the service.
	AdmittedRequests, AdmittedEntities int64
	// RefusedRequests and RefusedEntities count what it answered with 503 ServerBusy.
	RefusedRequests, RefusedEntities int64
}

func (c *Counts) add(admitted bool, entities int) {
	if admitted {
		c.AdmittedRequests++
		c.AdmittedEntities += int64(entities)
	} else {
		c.RefusedRequests++
		c.RefusedEntities += int64(entities)
	}
}

// ThrottleStats is what the model admitted and refused. Second i is the interval [i s,
// (i+1) s) after EmulateThrottling, by the model's clock.
type ThrottleStats struct {
	// Total counts every request the model judged.
	Total Counts
	// Seconds counts them per second.
	Seconds []Counts
	// Partitions counts them per partition (by PartitionOf), entities of a transaction each
	// under its own partition; requests with no known partition (a query without a
	// PartitionKey condition) are counted under "".
	Partitions map[string]Counts
	// PartitionSeconds counts them per partition and per second.
	PartitionSeconds map[string][]Counts
	// PartitionMaxInFlight is, per partition, the most requests the model judged that were
	// being answered at once (from the judgement to the end of the answer, refused ones
	// included): the client's concurrency in that partition as the service sees it.
	PartitionMaxInFlight map[string]int
}

// bucket is a token bucket: rate tokens per second, at most burst of them.
type bucket struct {
	tokens float64
	at     time.Time
}

// Throttle is a throughput model installed in a Proxy by EmulateThrottling. Its methods
// are safe for concurrent use.
type Throttle struct {
	proxy *Proxy
	opts  ThrottleOptions
	start time.Time

	mu         sync.Mutex
	account    bucket
	partitions map[string]*bucket
	inFlight   map[string]int
	stats      ThrottleStats
}

// EmulateThrottling installs a throughput model in front of the table service, replacing
// any earlier one, and returns it. It plays the service's scalability targets: a token
// bucket per partition and one for the account, filled at PartitionRate and AccountRate
// entities per second. Every entity request draws one token per entity from the bucket
// of its partition and from the account's: an insert, update, merge, delete or point read
// one; an entity group transaction one per action, each from the bucket of its own
// PartitionKey; a query one (its result size is not known in advance), from its
// partition's bucket when its $filter starts with a PartitionKey equality, else from the
// account's only. Table operations (create, delete, list tables), and Queue and Blob
// requests, are neither throttled nor counted.
//
// A request of n entities is admitted when every bucket it draws on holds min(n, burst)
// tokens; it then takes n (a transaction larger than the burst leaves a debt that time
// repays, so the long-run rate is the configured one). Otherwise the proxy answers, as
// the service does, 503 ServerBusy with the table service's JSON error body (message
// PartitionBusyMessage, or AccountBusyMessage when the account's bucket is the one
// short), without forwarding the request and without taking tokens. Rules run first: the
// model only sees requests that no rule answered or dropped (a request a Delay rule holds
// is judged before its delay, a paused one when it is released).
//
// The model's shape (token buckets, every PartitionKey its own partition unless
// PartitionOf says otherwise) is an assumption; the figures are the published targets.
//
// It returns an error, and installs nothing, when an option is invalid.
func (p *Proxy) EmulateThrottling(opts *ThrottleOptions) (*Throttle, error) {
	o := opts.withDefaults()
	if err := o.validate(); err != nil {
		return nil, err
	}
	now := o.Now()
	t := &Throttle{
		proxy:      p,
		opts:       o,
		start:      now,
		account:    bucket{tokens: o.AccountBurst, at: now},
		partitions: map[string]*bucket{},
		inFlight:   map[string]int{},
		stats:      newStats(),
	}
	p.throttle.Store(t)
	return t, nil
}

// Stop removes the model from its proxy, if it is still the one installed. Its counts
// stay readable.
func (t *Throttle) Stop() { t.proxy.throttle.CompareAndSwap(t, nil) }

// Reset fills every bucket, forgets the counts and restarts the clock of Stats' seconds,
// as if the model had just been installed.
func (t *Throttle) Reset() {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.opts.Now()
	t.start = now
	t.account = bucket{tokens: t.opts.AccountBurst, at: now}
	t.partitions = map[string]*bucket{}
	t.stats = newStats()
}

func newStats() ThrottleStats {
	return ThrottleStats{Partitions: map[string]Counts{}, PartitionSeconds: map[string][]Counts{}, PartitionMaxInFlight: map[string]int{}}
}

// Options returns the model's options with their defaults filled in.
func (t *Throttle) Options() ThrottleOptions { return t.opts }

// Stats returns a copy of the counts so far.
func (t *Throttle) Stats() ThrottleStats {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := ThrottleStats{
		Total:                t.stats.Total,
		Seconds:              append([]Counts(nil), t.stats.Seconds...),
		Partitions:           make(map[string]Counts, len(t.stats.Partitions)),
		PartitionSeconds:     make(map[string][]Counts, len(t.stats.PartitionSeconds)),
		PartitionMaxInFlight: make(map[string]int, len(t.stats.PartitionMaxInFlight)),
	}
	for k, v := range t.stats.PartitionMaxInFlight {
		out.PartitionMaxInFlight[k] = v
	}
	for k, v := range t.stats.Partitions {
		out.Partitions[k] = v
	}
	for k, v := range t.stats.PartitionSeconds {
		out.PartitionSeconds[k] = append([]Counts(nil), v...)
	}
	return out
}

// refusal is why the model refused a request.
type refusal struct{ message string }

// throttled is the proxy's hook: it judges r (whose body is body) when a model is
// installed and returns the refusal to answer with, or nil to go on, and done, to call
// once the request is answered (it ends the request's time in flight).
func (p *Proxy) throttled(r *http.Request, body []byte) (why *refusal, done func()) {
	t := p.throttle.Load()
	if t == nil {
		return nil, func() {}
	}
	keys, ok := entityPartitionKeys(r, body)
	if !ok {
		return nil, func() {}
	}
	return t.admit(keys)
}

// admit applies the buckets to a request carrying one entity per key ("" = a partition
// the model cannot tell), counts it, and returns done, which ends its time in flight.
func (t *Throttle) admit(keys []string) (*refusal, func()) {
	need := map[string]float64{} // partition -> entities; "" = unknown, account only
	for _, k := range keys {
		part := ""
		if k != "" {
			part = t.opts.PartitionOf(k)
		}
		need[part]++
	}
	n := float64(len(keys))

	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.opts.Now()
	var why *refusal
	if t.opts.PartitionRate > 0 {
		for part, m := range need {
			if part == "" {
				continue
			}
			b := t.partitions[part]
			if b == nil {
				b = &bucket{tokens: t.opts.PartitionBurst, at: now}
				t.partitions[part] = b
			}
			refill(b, now, t.opts.PartitionRate, t.opts.PartitionBurst)
			if b.tokens < min(m, t.opts.PartitionBurst) {
				why = &refusal{message: PartitionBusyMessage}
			}
		}
	}
	if why == nil && t.opts.AccountRate > 0 {
		refill(&t.account, now, t.opts.AccountRate, t.opts.AccountBurst)
		if t.account.tokens < min(n, t.opts.AccountBurst) {
			why = &refusal{message: AccountBusyMessage}
		}
	}
	admitted := why == nil
	if admitted {
		if t.opts.PartitionRate > 0 {
			for part, m := range need {
				if b := t.partitions[part]; b != nil && part != "" {
					b.tokens -= m
				}
			}
		}
		if t.opts.AccountRate > 0 {
			t.account.tokens -= n
		}
	}
	t.count(now, need, admitted)
	return why, t.enter(need)
}

// enter counts a judged request in flight in each of its partitions, and returns the
// function that counts it out (once, whatever the Throttle's Reset did in between). t.mu
// is held.
func (t *Throttle) enter(need map[string]float64) func() {
	parts := make([]string, 0, len(need))
	for part := range need {
		if part == "" {
			continue
		}
		parts = append(parts, part)
		t.inFlight[part]++
		if n := t.inFlight[part]; n > t.stats.PartitionMaxInFlight[part] {
			t.stats.PartitionMaxInFlight[part] = n
		}
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			t.mu.Lock()
			defer t.mu.Unlock()
			for _, part := range parts {
				if t.inFlight[part]--; t.inFlight[part] <= 0 {
					delete(t.inFlight, part)
				}
			}
		})
	}
}

// count records one judged request. t.mu is held.
func (t *Throttle) count(now time.Time, need map[string]float64, admitted bool) {
	sec := max(int(now.Sub(t.start)/time.Second), 0)
	for len(t.stats.Seconds) <= sec {
		t.stats.Seconds = append(t.stats.Seconds, Counts{})
	}
	total := 0
	for part, m := range need {
		total += int(m)
		c := t.stats.Partitions[part]
		c.add(admitted, int(m))
		t.stats.Partitions[part] = c
		ps := t.stats.PartitionSeconds[part]
		for len(ps) <= sec {
			ps = append(ps, Counts{})
		}
		ps[sec].add(admitted, int(m))
		t.stats.PartitionSeconds[part] = ps
	}
	t.stats.Total.add(admitted, total)
	t.stats.Seconds[sec].add(admitted, total)
}

func refill(b *bucket, now time.Time, rate, burst float64) {
	if dt := now.Sub(b.at).Seconds(); dt > 0 {
		b.tokens = min(burst, b.tokens+rate*dt)
	}
	b.at = now
}

// writeThrottled answers as the table service does when it sheds load: 503 ServerBusy with
// its OData JSON error body, {"odata.error":{"code":"ServerBusy","message":{"lang":"en-US",
// "value":"<message>\nRequestId:<id>\nTime:<time>"}}}.
func writeThrottled(w http.ResponseWriter, r *http.Request, why *refusal) {
	id := fmt.Sprintf("00000000-0000-4000-8000-%012x", requestSeq.Add(1))
	value := why.message + "\nRequestId:" + id + "\nTime:" + time.Now().UTC().Format("2006-01-02T15:04:05.0000000Z")
	type msg struct {
		Lang  string `json:"lang"`
		Value string `json:"value"`
	}
	type odataError struct {
		Code    string `json:"code"`
		Message msg    `json:"message"`
	}
	body, _ := json.Marshal(map[string]odataError{"odata.error": {Code: "ServerBusy", Message: msg{Lang: "en-US", Value: value}}})
	h := w.Header()
	h.Set("Content-Type", "application/json;odata=minimalmetadata;streaming=true;charset=utf-8")
	h.Set("x-ms-error-code", "ServerBusy")
	h.Set("x-ms-request-id", id)
	h.Set("x-ms-version", "2019-02-02")
	h.Set("Cache-Control", "no-cache")
	if r.Method == http.MethodHead {
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	h.Set("Content-Length", fmt.Sprint(len(body)))
	w.WriteHeader(http.StatusServiceUnavailable)
	_, _ = w.Write(body)
}

// --- what a request costs ---

// entityPartitionKeys returns one PartitionKey per entity the table request r carries ("" for
// one the model cannot tell, a query without a PartitionKey condition), and false for a
// request the model does not judge (table operations, other services).
func entityPartitionKeys(r *http.Request, body []byte) ([]string, bool) {
	if !isTableRequest(r) { // a Queue or Blob request whose path looks like a table's
		return nil, false
	}
	if IsBatch(r) {
		return batchPartitionKeys(r.Header.Get("Content-Type"), body), true
	}
	if IsInsertEntity(r) {
		return []string{bodyPartitionKey(body)}, true
	}
	if IsEntityWrite(r) || IsGetEntity(r) {
		_, args, _ := entityResource(r.URL.Path)
		pk, _ := keyArg(args)
		return []string{pk}, true
	}
	if IsListEntities(r) {
		return []string{filterPartitionKey(r.URL.Query().Get("$filter"))}, true
	}
	return nil, false
}

// bodyPartitionKey returns the PartitionKey of an entity's JSON, "" if it has none.
func bodyPartitionKey(body []byte) string {
	var e struct {
		PartitionKey string `json:"PartitionKey"`
	}
	_ = json.Unmarshal(body, &e)
	return e.PartitionKey
}

// keyArg returns the PartitionKey of an entity resource's arguments,
// PartitionKey='..',RowKey='..' (decoded, OData quotes undoubled).
func keyArg(args string) (string, bool) {
	rest, ok := strings.CutPrefix(args, "PartitionKey=")
	if !ok {
		return "", false
	}
	v, _, ok := odataString(rest)
	return v, ok
}

// filterPartitionKey returns k of a $filter that starts with PartitionKey eq 'k' (alone or
// followed by " and ..."), else "".
func filterPartitionKey(filter string) string {
	f := strings.TrimLeft(filter, "( ")
	rest, ok := strings.CutPrefix(f, "PartitionKey eq ")
	if !ok {
		return ""
	}
	v, after, ok := odataString(rest)
	if !ok {
		return ""
	}
	after = strings.TrimLeft(after, ") ")
	if after != "" && !strings.HasPrefix(after, "and ") {
		return "" // "PartitionKey eq 'a' or ...": more than one partition
	}
	return v
}

// odataString reads an OData string literal ('it”s') at the start of s and returns its
// value and what follows it.
func odataString(s string) (value, rest string, ok bool) {
	if !strings.HasPrefix(s, "'") {
		return "", "", false
	}
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		if s[i] != '\'' {
			b.WriteByte(s[i])
			continue
		}
		if i+1 < len(s) && s[i+1] == '\'' {
			b.WriteByte('\'')
			i++
			continue
		}
		return b.String(), s[i+1:], true
	}
	return "", "", false
}

// maxBatchParts bounds the sub-requests read from one $batch (the service allows 100).
const maxBatchParts = 1000

// batchPartitionKeys returns the PartitionKey of every sub-request of a $batch body, or
// one unknown key when the body cannot be read (the service will refuse it anyway).
func batchPartitionKeys(contentType string, body []byte) []string {
	var keys []string
	var walk func(contentType string, body io.Reader, depth int)
	walk = func(contentType string, body io.Reader, depth int) {
		mt, params, err := mime.ParseMediaType(contentType)
		if err != nil || !strings.HasPrefix(mt, "multipart/") || params["boundary"] == "" || depth > 2 {
			return
		}
		mr := multipart.NewReader(body, params["boundary"])
		for len(keys) < maxBatchParts {
			part, err := mr.NextPart()
			if err != nil {
				return
			}
			ct := part.Header.Get("Content-Type")
			if strings.HasPrefix(ct, "multipart/") {
				walk(ct, part, depth+1)
				continue
			}
			raw, err := io.ReadAll(io.LimitReader(part, 9<<20))
			if err != nil {
				continue
			}
			req, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(raw)))
			if err != nil {
				// A sub-request without a body (a delete) ends with its last header line:
				// the blank line that closes its headers is the CRLF the multipart reader
				// takes as the boundary's.
				if req, err = http.ReadRequest(bufio.NewReader(io.MultiReader(bytes.NewReader(raw), strings.NewReader("\r\n")))); err != nil {
					continue
				}
			}
			sub, _ := io.ReadAll(io.LimitReader(req.Body, 8<<20))
			_ = req.Body.Close()
			if _, args, ok := entityResource(req.URL.Path); ok && args != "" {
				pk, _ := keyArg(args)
				keys = append(keys, pk)
			} else {
				keys = append(keys, bodyPartitionKey(sub))
			}
		}
	}
	walk(contentType, bytes.NewReader(body), 0)
	if len(keys) == 0 {
		return []string{""}
	}
	return keys
}
