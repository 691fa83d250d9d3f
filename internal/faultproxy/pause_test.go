package faultproxy_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"

	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
)

// TestPauseHoldsTheNthMatchingRequest holds the second insert at the proxy: the first
// insert and a read pass while it is held, the held insert reaches the service only after
// Release, and it is recorded under the pause's name.
func TestPauseHoldsTheNthMatchingRequest(t *testing.T) {
	t.Parallel()
	p, tc, direct := proxiedTable(t)
	ps := p.PauseAt("second insert", faultproxy.IsInsertEntity, 2)
	t.Cleanup(ps.Release)
	ctx := t.Context()

	if _, err := tc.AddEntity(ctx, entity(t, "p", "1"), nil); err != nil {
		t.Fatalf("first insert: %v", err)
	}
	select {
	case <-ps.Reached():
		t.Fatal("the pause held the first insert")
	default:
	}
	done := make(chan error, 1)
	go func() {
		_, err := tc.AddEntity(ctx, entity(t, "p", "2"), nil)
		done <- err
	}()
	if err := ps.Wait(ctx); err != nil { // one that never arrives hangs until go test -timeout
		t.Fatalf("the second insert never reached the pause: %v", err)
	}
	// Held: the service has not seen it, and other requests pass.
	if _, err := direct.GetEntity(ctx, "p", "2", nil); err == nil {
		t.Fatal("the held insert reached the service before Release")
	}
	if _, err := tc.GetEntity(ctx, "p", "1", nil); err != nil {
		t.Fatalf("a read through the proxy while an insert is held: %v", err)
	}
	select {
	case err := <-done:
		t.Fatalf("the held insert returned before Release: %v", err)
	default:
	}
	ps.Release()
	if err := <-done; err != nil {
		t.Fatalf("released insert: %v", err)
	}
	if _, err := direct.GetEntity(ctx, "p", "2", nil); err != nil {
		t.Fatalf("the released insert did not land: %v", err)
	}
	if got := ps.Seen(); got != 2 {
		t.Fatalf("Seen = %d, want 2", got)
	}
	if n := p.CountMatching(func(r faultproxy.RequestInfo) bool { return r.Fired == "second insert" }); n != 1 {
		t.Fatalf("%d requests recorded under the pause's name, want 1", n)
	}
	// Removed on Release: a third insert passes untouched.
	if _, err := tc.AddEntity(ctx, entity(t, "p", "3"), nil); err != nil {
		t.Fatalf("third insert: %v", err)
	}
}

// TestPauseEndsWithTheClient: a client that gives up on a held request frees the proxy's
// handler; Wait honours its context when nothing arrives.
func TestPauseEndsWithTheClient(t *testing.T) {
	t.Parallel()
	p, tc, direct := proxiedTable(t)
	ps := p.PauseAt("held", faultproxy.MethodIs(http.MethodPost), 1)
	t.Cleanup(ps.Release)

	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		_, err := tc.AddEntity(ctx, entity(t, "p", "1"), nil)
		done <- err
	}()
	if err := ps.Wait(t.Context()); err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := <-done; err == nil {
		t.Fatal("a cancelled held insert returned nil")
	}
	// Not forwarded once the client left (the handler stopped before forwarding or the
	// service saw it after: either way the client got an error, which is what matters);
	// the next POST is not held.
	if _, err := tc.AddEntity(t.Context(), entity(t, "p", "2"), &aztables.AddEntityOptions{}); err != nil {
		t.Fatalf("insert after the held one: %v", err)
	}
	if _, err := direct.GetEntity(t.Context(), "p", "2", nil); err != nil {
		t.Fatal(err)
	}

	other := p.PauseAt("never", faultproxy.IsDeleteTable, 1)
	t.Cleanup(other.Release)
	wctx, wcancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer wcancel()
	if err := other.Wait(wctx); err == nil {
		t.Fatal("Wait returned nil although nothing was held")
	}
}

// TestPauseDetachLandsAfterTheClientGaveUp: a detached pause forwards the held insert even
// though its client gave up, and WaitIdle returns once it has reached the service.
func TestPauseDetachLandsAfterTheClientGaveUp(t *testing.T) {
	t.Parallel()
	p, tc, direct := proxiedTable(t)
	ps := p.PauseAt("held", faultproxy.MethodIs(http.MethodPost), 1)
	ps.Detach()
	t.Cleanup(ps.Release)

	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		_, err := tc.AddEntity(ctx, entity(t, "p", "late"), nil)
		done <- err
	}()
	if err := ps.Wait(t.Context()); err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := <-done; err == nil {
		t.Fatal("a cancelled held insert returned nil")
	}
	if err := p.WaitIdle(t.Context()); err != nil { // never idle: hangs until go test -timeout
		t.Fatalf("WaitIdle: %v", err)
	}
	if _, err := direct.GetEntity(t.Context(), "p", "late", nil); err != nil {
		t.Fatalf("the detached insert did not land after its client gave up: %v", err)
	}
}
