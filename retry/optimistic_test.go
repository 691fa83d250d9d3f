package retry

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/tablepatterns/tablepatterns/internal/errs"
)

var errLost = fmt.Errorf("write: %w", errs.ErrPreconditionFailed)

func TestOptimisticRunsAnotherRoundOnlyForAgain(t *testing.T) {
	for _, c := range []struct {
		name   string
		ret    func(n int) error
		rounds int
		want   error
	}{
		{"again then success", func(n int) error {
			if n < 3 {
				return Again(errLost)
			}
			return nil
		}, 3, nil},
		{"unmarked conflict is final", func(int) error { return errLost }, 1, errLost},
		// A mark wrapped by another error is an inner loop's or a caller's: final here.
		{"wrapped mark is final", func(int) error { return fmt.Errorf("inner: %w", Again(errLost)) }, 1, errLost},
		{"outcome unknown unmarked is final", func(int) error {
			return &errs.OutcomeUnknownError{Op: "update", Err: errLost}
		}, 1, errs.ErrOutcomeUnknown},
	} {
		t.Run(c.name, func(t *testing.T) {
			rounds := 0
			err := Optimistic(context.Background(), fastPolicy(10, nil), Op{Name: "test"}, func(_ context.Context, n int) error {
				rounds++
				if n != rounds {
					t.Errorf("round number %d, want %d", n, rounds)
				}
				return c.ret(n)
			})
			if rounds != c.rounds {
				t.Errorf("%d rounds, want %d", rounds, c.rounds)
			}
			if c.want == nil && err != nil || c.want != nil && !errors.Is(err, c.want) {
				t.Errorf("err = %v, want %v", err, c.want)
			}
			if IsAgain(err) {
				t.Errorf("a marked error left the loop: %v", err)
			}
		})
	}
}

func TestOptimisticExhaustedIsTransientAndUnmarked(t *testing.T) {
	rounds := 0
	err := Optimistic(context.Background(), fastPolicy(2, nil), Op{Name: "test"}, func(context.Context, int) error {
		rounds++
		return Again(errLost)
	})
	var ex *ExhaustedError
	if !errors.As(err, &ex) || !errors.Is(err, ErrTransient) || !errors.Is(err, errs.ErrPreconditionFailed) {
		t.Fatalf("err = %v, want an *ExhaustedError unwrapping to ErrTransient and ErrPreconditionFailed", err)
	}
	if rounds != 3 || ex.Attempts != 3 {
		t.Errorf("rounds %d, attempts %d, want 3", rounds, ex.Attempts)
	}
	if IsAgain(ex.Err) {
		t.Errorf("the exhausted error keeps the mark: %#v", ex.Err)
	}
}

func TestOptimisticCancelledIsUnmarked(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	p := Policy{Delay: time.Hour, MinDelay: time.Hour, MaxDelay: time.Hour, MaxRetries: 3}
	err := Optimistic(ctx, p, Op{Name: "test"}, func(context.Context, int) error {
		cancel() // the wait that follows ends at once
		return Again(errLost)
	})
	if !errors.Is(err, context.Canceled) || !errors.Is(err, errs.ErrPreconditionFailed) {
		t.Fatalf("err = %v, want context.Canceled and the last error", err)
	}
	var ie *interruptedError
	if !errors.As(err, &ie) || IsAgain(ie.last) {
		t.Errorf("the interrupted error keeps the mark: %#v", err)
	}
}

func TestOptimisticRetryableAddsRounds(t *testing.T) {
	rounds := 0
	err := Optimistic(context.Background(), fastPolicy(5, nil), Op{Name: "test", Retryable: func(err error) bool { return errors.Is(err, errLost) }},
		func(_ context.Context, n int) error {
			rounds++
			if n == 1 {
				return errLost
			}
			return nil
		})
	if err != nil || rounds != 2 {
		t.Fatalf("err %v after %d rounds, want nil after 2", err, rounds)
	}
}

func TestOptimisticZeroPolicyIsConflict(t *testing.T) {
	// The zero policy takes Conflict's 50 retries: an invalid field is still refused.
	err := Optimistic(context.Background(), Policy{MaxRetries: -5}, Op{Name: "test"}, func(context.Context, int) error {
		t.Fatal("ran with an invalid policy")
		return nil
	})
	if !errors.Is(err, errs.ErrInvalidInput) {
		t.Fatalf("err = %v, want ErrInvalidInput", err)
	}
	if got := (Policy{}).Or(Conflict()); got.MaxRetries != 50 || got.Delay != 10*time.Millisecond {
		t.Errorf("zero policy completed to %+v", got)
	}
}

func TestConflictReturnsACopy(t *testing.T) {
	p := Conflict()
	p.MaxRetries = 1
	if Conflict().MaxRetries != 50 {
		t.Fatal("changing one copy changed the preset")
	}
}

func TestAgainNilAndConflicted(t *testing.T) {
	if Again(nil) != nil {
		t.Error("Again(nil) is not nil")
	}
	if !Conflicted(errLost) || !Conflicted(errs.ErrAlreadyExists) || Conflicted(errs.ErrNotFound) {
		t.Error("Conflicted misclassifies")
	}
	if Conflicted(&errs.OutcomeUnknownError{Err: errLost}) || !Unknown(&errs.OutcomeUnknownError{Err: errLost}) {
		t.Error("an unknown outcome is not a conflict")
	}
}
