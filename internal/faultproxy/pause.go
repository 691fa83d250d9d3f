package faultproxy

import (
	"context"
	"net/http"
	"sync"
	"sync/atomic"
)

// Pause holds one chosen request at the proxy, before it is forwarded, until the test
// releases it: the tool for window tests. A test that must prove "if another writer
// commits between this read and that write, the promise still holds" pauses the write (or
// the read) at the proxy, waits until it is held, runs the other writer to completion, and
// releases it. The interleaving is then exact, not hoped for, and no sleep is involved:
//
//	ps := proxies.Table.PauseAt("slow transaction", faultproxy.IsBatch, 1)
//	t.Cleanup(ps.Release)
//	go func() { done <- x.Reconcile(ctx, pk, rk) }() // runs until its transaction is held
//	if err := ps.Wait(ctx); err != nil { t.Fatal(err) }
//	... the concurrent writer runs to completion ...
//	ps.Release()                                     // the held request is forwarded now
//	err := <-done
//
// A Pause is a Rule (added by Proxy.PauseAt) whose matcher counts the requests that match
// and blocks on the nth one until Release, or until the client gives up on the request
// (its context ends, the proxy closes). It then fires with the zero Action: the request is
// forwarded untouched and recorded with Fired set to the pause's name; a request whose
// client gave up is forwarded with that client's ended context and so does not reach the
// service, unless the test called Detach. Other requests pass
// by, held or not, so the rest of the system keeps running while one request waits.
//
// Mind the order of rules: a request that an earlier rule fires on never reaches the pause
// and is not counted, and while the request is held the proxy has not recorded it yet
// (Count and Requests include it once it is released). Always Release in t.Cleanup, or the
// held request stays blocked until the proxy is closed.
type Pause struct {
	name    string
	match   func(*http.Request) bool
	nth     int
	remove  func()
	mu      sync.Mutex
	seen    int
	reached chan struct{}
	release chan struct{}
	once    sync.Once
	// detach, set by Detach, forwards the held request even after its client gave up.
	detach atomic.Bool
}

// Detach makes the proxy forward the held request to the service even when its client
// gave up on it while it was held, as a real service goes on with a request whose client
// went away: the write lands after the client saw its failure. Without it the forward
// carries the client's ended context and does not reach the service. Wait for the
// forward to finish with Proxy.WaitIdle. Call it before the client gives up.
func (ps *Pause) Detach() { ps.detach.Store(true) }

// detached reports whether r, held by this pause, must be forwarded although its client
// gave up.
func (ps *Pause) detached(r *http.Request) bool {
	return ps.detach.Load() && r.Context().Err() != nil
}

// PauseAt adds a rule named name, after the existing rules, that holds the nth request
// (counting from 1) that match selects (nil selects every request) before it is forwarded,
// until the returned Pause is released. Requests before and after the nth pass untouched.
// An nth below 1 is taken as 1.
func (p *Proxy) PauseAt(name string, match func(*http.Request) bool, nth int) *Pause {
	if nth < 1 {
		nth = 1
	}
	ps := &Pause{name: name, match: match, nth: nth, reached: make(chan struct{}), release: make(chan struct{})}
	ps.remove = p.AddRule(Rule{Name: name, Match: ps.hold, pause: ps})
	return ps
}

// hold is the rule's matcher: it counts the matching requests and blocks on the chosen one.
func (ps *Pause) hold(r *http.Request) bool {
	if ps.match != nil && !ps.match(r) {
		return false
	}
	ps.mu.Lock()
	ps.seen++
	mine := ps.seen == ps.nth
	ps.mu.Unlock()
	if !mine {
		return false
	}
	close(ps.reached)
	select {
	case <-ps.release:
	case <-r.Context().Done():
	}
	return true
}

// Name returns the name given to PauseAt, as recorded in RequestInfo.Fired.
func (ps *Pause) Name() string { return ps.name }

// Reached returns a channel that is closed once the chosen request is held.
func (ps *Pause) Reached() <-chan struct{} { return ps.reached }

// Wait blocks until the chosen request is held, or ctx ends (then it returns ctx.Err()).
func (ps *Pause) Wait(ctx context.Context) error {
	select {
	case <-ps.reached:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Seen returns how many requests the pause has matched so far, the held one included.
func (ps *Pause) Seen() int {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	return ps.seen
}

// Release forwards the held request (or lets the chosen one pass at once if it has not
// arrived yet) and removes the rule. It is safe to call more than once.
func (ps *Pause) Release() {
	ps.once.Do(func() {
		close(ps.release)
		ps.remove()
	})
}
