package retry

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/tablepatterns/tablepatterns/internal/errs"
)

// heldTasks runs Schedule in the background with tasks that report their start and block
// until released, so that the test sees exactly which tasks run together.
type heldTasks struct {
	started chan int
	release map[int]chan struct{}
	done    chan error
}

func runHeld(t *testing.T, partitions []string, opts *ScheduleOptions) *heldTasks {
	t.Helper()
	h := &heldTasks{started: make(chan int, len(partitions)), release: map[int]chan struct{}{}, done: make(chan error, 1)}
	for i := range partitions {
		h.release[i] = make(chan struct{})
	}
	go func() {
		h.done <- Schedule(t.Context(), partitions, opts, func(ctx context.Context, i int) error {
			h.started <- i
			<-h.release[i]
			return nil
		})
	}()
	t.Cleanup(func() {
		for _, c := range h.release {
			select {
			case <-c:
			default:
				close(c)
			}
		}
	})
	return h
}

// next returns the next n tasks started, sorted.
func (h *heldTasks) next(n int) []int {
	var out []int
	for range n {
		out = append(out, <-h.started)
	}
	slices.Sort(out)
	return out
}

// One large partition never holds every worker: with 4 workers and at most 2 tasks per
// partition, the first tasks go one per partition, in turn, and the large partition never
// runs more than 2 at once.
func TestScheduleSpreadsTasksOverPartitions(t *testing.T) {
	parts := []string{"hot", "hot", "hot", "hot", "hot", "hot", "c1", "c2", "c3", "c4"}
	h := runHeld(t, parts, &ScheduleOptions{Concurrency: 4, PartitionConcurrency: 2})
	if got := h.next(4); !slices.Equal(got, []int{0, 6, 7, 8}) {
		t.Fatalf("first tasks %v, want one per partition in turn: [0 6 7 8]", got)
	}
	close(h.release[6]) // c1 ends: c4 has nothing running, hot has one
	if got := h.next(1); !slices.Equal(got, []int{9}) {
		t.Fatalf("then %v, want c4's task 9", got)
	}
	close(h.release[7]) // c2 ends: only hot has tasks left, one running
	if got := h.next(1); !slices.Equal(got, []int{1}) {
		t.Fatalf("then %v, want hot's next task 1", got)
	}
	close(h.release[8]) // c3 ends: hot runs 2, its bound
	select {
	case i := <-h.started:
		t.Fatalf("task %d started while hot already ran 2 tasks", i)
	default:
	}
	for _, i := range []int{0, 1, 2, 3, 4, 5, 9} {
		select {
		case <-h.release[i]:
		default:
			close(h.release[i])
		}
	}
	if err := <-h.done; err != nil {
		t.Fatal(err)
	}
	if got := h.next(4); !slices.Equal(got, []int{2, 3, 4, 5}) {
		t.Fatalf("the rest %v, want hot's 2 3 4 5", got)
	}
}

// Each task's context carries its partition (for the Gate), and a partition's tasks start
// in index order.
func TestScheduleMarksEachTaskWithItsPartition(t *testing.T) {
	parts := []string{"a", "b", "a", "c", "a", "b"}
	var mu sync.Mutex
	order := map[string][]int{}
	err := Schedule(t.Context(), parts, &ScheduleOptions{Concurrency: 3, PartitionConcurrency: 1}, func(ctx context.Context, i int) error {
		p, ok := PartitionOf(ctx)
		if !ok || p != parts[i] {
			return fmt.Errorf("task %d: partition %q, %v; want %q", i, p, ok, parts[i])
		}
		mu.Lock()
		defer mu.Unlock()
		order[p] = append(order[p], i)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(order["a"], []int{0, 2, 4}) || !slices.Equal(order["b"], []int{1, 5}) || !slices.Equal(order["c"], []int{3}) {
		t.Fatalf("order %v", order)
	}
}

// A partition its Gate holds (the readiness a Gate reports through the task's context)
// gives way to the partitions that may send now.
func TestScheduleStartsFreePartitionsFirst(t *testing.T) {
	parts := []string{"hot", "hot", "hot", "cold", "cold"}
	var mu sync.Mutex
	var order []int
	err := Schedule(t.Context(), parts, &ScheduleOptions{Concurrency: 1}, func(ctx context.Context, i int) error {
		mu.Lock()
		order = append(order, i)
		mu.Unlock()
		switch i {
		case 0: // the Gate holds hot after its first task
			hintsOf(ctx).heldUntil("hot", time.Now().Add(time.Hour))
		case 4: // and frees it once cold is done
			hintsOf(ctx).heldUntil("hot", time.Time{})
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(order, []int{0, 3, 4, 1, 2}) {
		t.Fatalf("order %v, want hot's first task, both cold ones while hot is held, then hot's: [0 3 4 1 2]", order)
	}
}

// When every partition with work is held, Schedule waits until the first is free instead
// of parking a worker in its queue.
func TestScheduleWaitsForAHeldPartition(t *testing.T) {
	var free time.Time
	var started time.Time
	err := Schedule(t.Context(), []string{"p", "p"}, &ScheduleOptions{Concurrency: 1}, func(ctx context.Context, i int) error {
		if i == 0 {
			free = time.Now().Add(50 * time.Millisecond)
			hintsOf(ctx).heldUntil("p", free)
			return nil
		}
		started = time.Now()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if started.Before(free) {
		t.Fatalf("task 1 started %v before its partition was free", free.Sub(started))
	}
}

func TestScheduleFirstErrorCancelsTheRest(t *testing.T) {
	boom := errors.New("boom")
	var mu sync.Mutex
	ran := 0
	err := Schedule(t.Context(), []string{"a", "b", "c", "d", "e", "f"}, &ScheduleOptions{Concurrency: 1}, func(ctx context.Context, i int) error {
		mu.Lock()
		ran++
		mu.Unlock()
		if i == 1 {
			return boom
		}
		return ctx.Err()
	})
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v, want boom", err)
	}
	if ran != 2 {
		t.Fatalf("%d tasks ran, want 2: none starts after the first error", ran)
	}
}

func TestScheduleRefusesBadOptions(t *testing.T) {
	for _, o := range []ScheduleOptions{{Concurrency: -1}, {PartitionConcurrency: -2}} {
		called := false
		err := Schedule(t.Context(), []string{"a"}, &o, func(context.Context, int) error { called = true; return nil })
		if !errors.Is(err, errs.ErrInvalidInput) || called {
			t.Errorf("%+v: err %v, called %v; want ErrInvalidInput and no task", o, err, called)
		}
	}
	if err := Schedule(t.Context(), nil, nil, func(context.Context, int) error { return errors.New("no task") }); err != nil {
		t.Errorf("no tasks: %v", err)
	}
}
