package denormalize

import (
	"context"
	"time"
)

// seams is the one thing tests set on a Relation: step runs before each request of a
// write ("enqueue", "transaction", "write") and between the steps of a reconciliation
// ("link", "unlink", "copy"), where an error stops it as a crash would; now is the
// handlers' clock.
type seams struct {
	step func(ctx context.Context, name string) error
	now  func() time.Time
}

// at runs the step seam, if set, before step name.
func (s seams) at(ctx context.Context, name string) error {
	if s.step == nil {
		return nil
	}
	return s.step(ctx, name)
}

// clock returns the handlers' time.
func (s seams) clock() time.Time {
	if s.now == nil {
		return time.Now()
	}
	return s.now()
}
