package maintain

import (
	"context"
	"errors"
	"testing"

	"github.com/tablepatterns/tablepatterns/internal/errs"
)

// A job read back from a queue is validated before anything is done with it: keys the
// service refuses, a resume point on a job that takes its partition whole, and what the
// index's own Check refuses.
func TestJobCheck(t *testing.T) {
	j := &Jobs{Check: func(pk string) error {
		if pk == "idx_Sales" {
			return errs.Invalid("PartitionKey", "is an index partition")
		}
		return nil
	}}
	for _, c := range []struct {
		job       Job
		resumable bool
		ok        bool
	}{
		{Job{PartitionKey: "Sales"}, false, true},
		{Job{PartitionKey: "Sales", After: "000001"}, true, true},
		{Job{PartitionKey: "Sales", After: "000001"}, false, false},
		{Job{PartitionKey: ""}, true, false},
		{Job{PartitionKey: "a/b"}, true, false},
		{Job{PartitionKey: "Sales", After: "x\u0001"}, true, false},
		{Job{PartitionKey: "idx_Sales"}, true, false},
	} {
		err := j.check(c.job, c.resumable)
		if c.ok != (err == nil) || (err != nil && !errors.Is(err, errs.ErrInvalidInput)) {
			t.Errorf("check(%+v, %v) = %v, want ok=%v", c.job, c.resumable, err, c.ok)
		}
	}
	if err := (&Jobs{}).needQueue(); !errors.Is(err, errs.ErrInvalidInput) {
		t.Errorf("no queue: %v", err)
	}
}

// The adapters hand a job's resume point and limit to the package's call and its
// checkpoint back, also with an error; a report is summarized, and a nil report (a call
// refused before it read anything) gives the zero Summary with the error.
func TestAdapters(t *testing.T) {
	type opts struct {
		after string
		limit int
	}
	type checkpoint struct {
		after string
		done  bool
	}
	boom := errors.New("boom")
	var got opts
	backfill := BackfillFunc(func(_ context.Context, pk string, o *opts) (checkpoint, error) {
		got = *o
		return checkpoint{after: pk + "/" + o.after + "+1", done: o.limit == 0}, boom
	}, func(after string, limit int) *opts { return &opts{after, limit} },
		func(cp checkpoint) (string, bool) { return cp.after, cp.done })
	next, done, err := backfill(t.Context(), "Sales", "000007", 1000)
	if got != (opts{"000007", 1000}) || next != "Sales/000007+1" || done || err != boom {
		t.Fatalf("backfill: options %+v, returned %q %v %v", got, next, done, err)
	}
	type report struct{ n int }
	gotOpts := &opts{}
	verify := func(_ context.Context, pk string, o *opts) (*report, error) {
		gotOpts = o
		if pk == "" {
			return nil, boom
		}
		return &report{n: 3}, nil
	}
	run := ReportFunc(verify, func(r *report) Summary { return Summary{Entities: r.n} })
	if s, err := run(t.Context(), "Sales"); s.Entities != 3 || err != nil || gotOpts != nil {
		t.Fatalf("report: %+v %v (options %v, want nil: the defaults)", s, err, gotOpts)
	}
	if s, err := run(t.Context(), ""); s.Entities != 0 || err != boom {
		t.Fatalf("nil report: %+v %v", s, err)
	}
}
