package maintain

import (
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
