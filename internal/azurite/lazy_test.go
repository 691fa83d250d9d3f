package azurite_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/tablepatterns/tablepatterns/internal/azurite"
)

type fakeServer struct{ closed atomic.Int32 }

func (f *fakeServer) Close() error { f.closed.Add(1); return nil }

// Concurrent first users get one server; Close stops it once and ends the Lazy for good.
func TestLazyStartsOnceAndStopsForGood(t *testing.T) {
	t.Parallel()
	var starts atomic.Int32
	l := azurite.NewLazy(func(context.Context) (*fakeServer, error) { starts.Add(1); return &fakeServer{}, nil })
	if l.Started() {
		t.Fatal("started before anyone asked")
	}
	got := make([]*fakeServer, 8)
	var wg sync.WaitGroup
	for i := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := l.Start(context.Background())
			if err != nil {
				t.Error(err)
			}
			got[i] = s
		}()
	}
	wg.Wait()
	for _, s := range got {
		if s != got[0] {
			t.Fatal("two servers")
		}
	}
	if starts.Load() != 1 || !l.Started() {
		t.Fatalf("%d starts, Started %v; want 1, true", starts.Load(), l.Started())
	}
	if err := l.Close(); err != nil || got[0].closed.Load() != 1 || l.Started() {
		t.Fatalf("Close: %v, closed %d times, Started %v", err, got[0].closed.Load(), l.Started())
	}
	if _, err := l.Start(context.Background()); !errors.Is(err, azurite.ErrClosed) {
		t.Fatalf("Start after Close: %v, want ErrClosed", err)
	}
}

// A start that failed because the caller's context ended is tried again by the next
// caller; any other failure is remembered and returned to every later caller.
func TestLazyRetriesOnlyAfterTheCallerGaveUp(t *testing.T) {
	t.Parallel()
	boom := errors.New("boom")
	var starts atomic.Int32
	l := azurite.NewLazy(func(ctx context.Context) (*fakeServer, error) {
		starts.Add(1)
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		return nil, boom
	})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := l.Start(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled start: %v", err)
	}
	_, err1 := l.Start(context.Background())
	_, err2 := l.Start(context.Background())
	if err1 != boom || err2 != boom || starts.Load() != 2 {
		t.Fatalf("errors %v, %v after %d starts; want boom twice after 2 starts", err1, err2, starts.Load())
	}
	if err := l.Close(); err != nil {
		t.Fatalf("Close after a failed start: %v", err)
	}
}
