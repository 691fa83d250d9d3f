package migrate

import (
	"context"
	"testing"
)

// TestReaderNeverStepsBackWhenAnAbandonedWriteLandsLate: the request of an application
// write reaches the service, which does not answer before the client gives up on it (a
// loaded store); the application writes again, then a newer version; only then does the
// service apply the abandoned request. The reader through the migration never reads the
// older version after the newer one: in the old layout (DualWrite, CutOver) nor in the
// copy that stands alone (CleanUp, Done). Another-table migration, whose old layout the
// application writes through the migration without a condition of its own.
func TestReaderNeverStepsBackWhenAnAbandonedWriteLandsLate(t *testing.T) {
	t.Parallel()
	for _, stage := range []Stage{DualWrite, CutOver, CleanUp, Done} {
		t.Run(string(stage), func(t *testing.T) {
			t.Parallel()
			f := setup(t, false, true)
			keys, _ := f.planned(t, 10, 1)
			f.advanceTo(t, stage)
			f.settled(t)
			ctx, k := f.b.Ctx, keys[3]
			table := f.src.Name() // the layout the stage's writes put the value in
			if stage == CleanUp || stage == Done {
				table = f.tgt.Name()
			}
			l := holdFirst(t, f.b.Proxy(), entityWrite(table, k[1]))
			l.abandon(t, ctx, func(ctx context.Context) error {
				return f.m.Upsert(ctx, &Employee{Department: k[0], EmployeeID: k[1], Name: "n" + k[1], Seq: 5})
			})
			for _, seq := range []int64{5, 6} {
				if err := f.m.Upsert(ctx, &Employee{Department: k[0], EmployeeID: k[1], Name: "n" + k[1], Seq: seq}); err != nil {
					t.Fatalf("write of Seq %d: %v", seq, err)
				}
			}
			if v, err := f.m.Get(ctx, k[0], k[1]); err != nil || v.Seq != 6 {
				t.Fatalf("Get after the writes = Seq %d, %v; want 6", v.Seq, err)
			}
			l.land(t, ctx)
			v, err := f.m.Get(ctx, k[0], k[1])
			if err != nil || v.Seq < 6 {
				t.Errorf("Get once the abandoned write landed = Seq %d, %v: Seq %d after 6", v.Seq, err, v.Seq)
			}
		})
	}
}
