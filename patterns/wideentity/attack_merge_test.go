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

// Attack (pattern consequence of the merge-superseded ETag): an Update whose transaction
// committed but whose response was lost; before the retry another writer sets one property
// with SetProperty (an unconditional merge into one chunk: no write id, history kept). The
// retry recognises its write and hands the returned Entity LIVE chunk ETags, although one
// chunk now holds the other writer's property. A conditional Put of that Entity (the
// documented optimistic write) then succeeds and erases the other writer's property,
// instead of failing with ErrPreconditionFailed.
func TestAttackWideUpdateThenSetPropertyThenPutLosesUpdate(t *testing.T) {
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
