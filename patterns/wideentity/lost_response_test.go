package wideentity_test

import (
	"errors"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
	"github.com/tablepatterns/tablepatterns/patterns/wideentity"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/retry"
)

func onRetryOnce(f func()) *zap.Logger {
	done := false
	core, _ := observer.New(zap.WarnLevel)
	return zap.New(core, zap.Hooks(func(e zapcore.Entry) error {
		if e.Message == "retrying" && !done {
			done = true
			f()
		}
		return nil
	}))
}

// An Update whose transaction
// committed but whose response was lost; before the retry another writer sets one property
// with SetProperty (an unconditional merge into one chunk: no write id, history kept). The
// retry recognises its write and hands the returned Entity LIVE chunk ETags, although one
// chunk now holds the other writer's property. A conditional Put of that Entity (the
// documented optimistic write) must fail with ErrPreconditionFailed rather than erase the
// other writer's property.
func TestPutAfterRecognisedUpdateNeverErasesConcurrentSetProperty(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	other := store(t, b, nil)
	var setErr error
	s := storeWith(t, b, &repo.Options{
		Retry: retry.Policy{Delay: 5 * time.Millisecond, MinDelay: time.Millisecond, MaxDelay: 50 * time.Millisecond, MaxRetries: 20},
		Logger: onRetryOnce(func() {
			setErr = other.SetProperty(b.Ctx, "p", "r", "Other", int32(5))
		})}, nil)
	if _, err := other.Update(b.Ctx, "p", "r", func(e *wideentity.Entity) error {
		e.Properties = year(1)
		e.Properties["Other"] = int32(1)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	b.Proxy().AddRule(faultproxy.Rule{Name: "lost", Match: faultproxy.IsBatch, Times: 1, Action: faultproxy.DropAfterForward()})
	e, err := s.Update(b.Ctx, "p", "r", func(e *wideentity.Entity) error {
		e.Properties["Name"] = "mine"
		return nil
	})
	if b.Proxy().Fired("lost") != 1 {
		t.Fatal("the drop did not fire")
	}
	if setErr != nil {
		t.Fatal(setErr)
	}
	if err != nil {
		t.Fatalf("update whose transaction committed: %v", err)
	}
	e.Properties["Name"] = "mine again"
	err = s.Put(b.Ctx, e)
	got, gerr := s.Get(b.Ctx, "p", "r")
	if gerr != nil {
		t.Fatal(gerr)
	}
	if err == nil {
		t.Fatalf("Put conditional on the chunks returned by Update succeeded over another writer's SetProperty: Other = %v (want 5)", got.Properties["Other"])
	}
	if !errors.Is(err, repo.ErrPreconditionFailed) {
		t.Fatalf("Put: %v", err)
	}
}

// With retries on, a transaction whose response was lost is recognised as applied.
func TestLostResponseIsRecognised(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	s := store(t, b, nil)
	e := &wideentity.Entity{PartitionKey: "P", RowKey: "E", Properties: year(1)}
	if err := s.Insert(b.Ctx, e); err != nil {
		t.Fatal(err)
	}
	b.Proxy().AddRule(faultproxy.Rule{Name: "lost", Match: faultproxy.IsBatch, Times: 1, Action: faultproxy.DropAfterForward()})
	e.Properties = year(5)
	if err := s.Put(b.Ctx, e); err != nil { // conditional Put of the inserted entity
		t.Fatal(err)
	}
	if b.Proxy().Fired("lost") != 1 {
		t.Fatal("no response was lost")
	}
	rev := checkWhole(t, b, "P", "E", 2)
	if rev != e.Rev {
		t.Fatalf("stored rev %q, Put says %q", rev, e.Rev)
	}
	// The chunks' ETags were in the lost response: a further conditional Put must re-read
	// rather than overwrite whatever another writer may have stored since.
	e.Properties["Name"] = "again"
	if err := s.Put(b.Ctx, e); !errors.Is(err, repo.ErrPreconditionFailed) {
		t.Fatalf("conditional Put after a recovered one: %v, want ErrPreconditionFailed", err)
	}
	fresh, err := s.Get(b.Ctx, "P", "E")
	if err != nil {
		t.Fatal(err)
	}
	fresh.Properties["Name"] = "again"
	if err := s.Put(b.Ctx, fresh); err != nil {
		t.Fatalf("conditional Put after a re-read: %v", err)
	}
}

// A transaction whose response was lost, then another writer's update before the retry:
// each update's fn is applied exactly once (two +1 updates give 2, not 3).
func TestLostResponseThenAnotherUpdateAppliesFnOnce(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	other := store(t, b, nil)
	inc := func(e *wideentity.Entity) error {
		n, _ := e.Properties["N"].(int32)
		e.Properties["N"] = n + 1
		return nil
	}
	hooked := false
	core, _ := observer.New(zap.WarnLevel)
	logger := zap.New(core, zap.Hooks(func(e zapcore.Entry) error {
		// Between the lost response and the retry, another writer updates the entity.
		if e.Message == "retrying" && !hooked {
			hooked = true
			if _, err := other.Update(b.Ctx, "P", "E", inc); err != nil {
				t.Error(err)
			}
		}
		return nil
	}))
	s := storeWith(t, b, &repo.Options{Logger: logger}, nil)
	if err := s.Insert(b.Ctx, &wideentity.Entity{PartitionKey: "P", RowKey: "E", Properties: map[string]any{"N": int32(0)}}); err != nil {
		t.Fatal(err)
	}
	b.Proxy().AddRule(faultproxy.Rule{Name: "lost", Match: faultproxy.IsBatch, Times: 1, Action: faultproxy.DropAfterForward()})
	if _, err := s.Update(b.Ctx, "P", "E", inc); err != nil {
		t.Fatalf("update with a lost response: %v", err)
	}
	if !hooked || b.Proxy().Fired("lost") != 1 {
		t.Fatal("the lost response and the other writer did not happen")
	}
	got, err := s.Get(b.Ctx, "P", "E")
	if err != nil {
		t.Fatal(err)
	}
	if got.Properties["N"] != int32(2) {
		t.Fatalf("N = %v after two +1 updates, want 2", got.Properties["N"])
	}
}
