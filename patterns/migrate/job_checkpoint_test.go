package migrate

import (
	"testing"
)

// TestJobCheckpointOutsideItsRangeRefusedBeforeAnyRequest: a job from a queue whose
// checkpoint lies outside its range (at or beyond its end, or before its start) is
// refused (ErrInvalidInput) before any request, for each kind and phase.
func TestJobCheckpointOutsideItsRangeRefusedBeforeAnyRequest(t *testing.T) {
	t.Parallel()
	f := setup(t, false, true)
	before := f.b.Proxy().Count()
	for kind, p := range phases {
		for _, phase := range p {
			for _, j := range []Job{
				{PartitionKeyFrom: "b", PartitionKeyTo: "m", After: &Key{PartitionKey: "m"}},
				{PartitionKeyFrom: "b", PartitionKeyTo: "m", After: &Key{PartitionKey: "z", RowKey: "1"}},
				{PartitionKeyTo: "m", After: &Key{PartitionKey: "m", RowKey: ""}},
				{PartitionKeyFrom: "m", After: &Key{PartitionKey: "l", RowKey: "zzz"}},
			} {
				j.Migration, j.Kind, j.Phase = f.m.spec.Name, kind, phase
				if _, _, err := f.m.RunJob(f.b.Ctx, j); !isInvalid(err) {
					t.Errorf("%s phase %d after %+v in [%q, %q): RunJob = %v, want ErrInvalidInput", kind, phase, *j.After, j.PartitionKeyFrom, j.PartitionKeyTo, err)
				}
			}
		}
	}
	if n := f.b.Proxy().Count() - before; n != 0 {
		t.Errorf("%d requests sent for refused jobs", n)
	}
}
