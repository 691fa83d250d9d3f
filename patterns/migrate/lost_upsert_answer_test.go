package migrate

import (
	"net/http"
	"testing"

	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
)

// lostOnce loses the answer of the first PUT to table (applied by the service), and
// returns a check that it happened.
func lostOnce(t *testing.T, p *faultproxy.Proxy, table string) func() {
	p.AddRule(faultproxy.Rule{Name: "lost", Match: faultproxy.All(faultproxy.MethodIs(http.MethodPut), onTable(table)),
		Times: 1, Action: faultproxy.DropAfterForward()})
	return func() {
		t.Helper()
		if p.Fired("lost") != 1 {
			t.Fatal("the write's answer was never lost: the attack did not happen")
		}
	}
}

// TestUpsertWhoseAnswerIsLostSucceeds: an Upsert the migration sends If-Match the row
// read is applied and its answer lost, so the retry meets 412, its own success. The
// application made the write unconditional: the migration reads again and writes it
// again (a replace of the same value), and the Upsert succeeds with the stored ETag, at
// every stage, as it does before clean-up; never errs.ErrOutcomeUnknown for a write that
// asked for no condition. The same through a Schema.
func TestUpsertWhoseAnswerIsLostSucceeds(t *testing.T) {
	t.Parallel()
	for _, stage := range []Stage{DualWrite, CleanUp, Done} {
		t.Run(string(stage), func(t *testing.T) {
			t.Parallel()
			f := setup(t, false, true)
			keys, _ := f.planned(t, 6, 1)
			f.advanceTo(t, stage)
			f.settled(t)
			ctx, k := f.b.Ctx, keys[2]
			table := f.src.Name()
			if stage != DualWrite {
				table = f.tgt.Name()
				if err := f.m.finish(ctx, k[0], k[1]); err != nil { // the PUT lost is the copy's write
					t.Fatal(err)
				}
			}
			happened := lostOnce(t, f.b.Proxy(), table)
			v := &Employee{Department: k[0], EmployeeID: k[1], Name: "n", Seq: 7}
			err := f.m.Upsert(ctx, v)
			happened()
			if err != nil {
				t.Fatalf("Upsert whose answer was lost = %v, want nil", err)
			}
			if got, err := f.m.Get(ctx, k[0], k[1]); err != nil || got.Seq != 7 || got.ETag != v.ETag {
				t.Errorf("Get = Seq %d ETag %s, %v; want Seq 7 and the ETag the Upsert returned (%s)", got.Seq, got.ETag, err, v.ETag)
			}
		})
	}
	t.Run("Schema", func(t *testing.T) {
		t.Parallel()
		f := setupStaged(t, true, 0)
		keys, _ := f.planned(t, 6, 1)
		f.s = f.newSchema(t, "", true, 0)
		ctx, k := f.b.Ctx, keys[2]
		happened := lostOnce(t, f.b.Proxy(), f.b.Table)
		v := &EmployeeSplit{Department: k[0], EmployeeID: k[1], FirstName: "F", LastName: "L", Seq: 7}
		err := f.s.Upsert(ctx, v)
		happened()
		if err != nil {
			t.Fatalf("Schema Upsert whose answer was lost = %v, want nil", err)
		}
		if got, err := f.s.Get(ctx, k[0], k[1]); err != nil || got.Seq != 7 || got.ETag != v.ETag {
			t.Errorf("Get = Seq %d ETag %s, %v; want Seq 7 and the ETag the Upsert returned (%s)", got.Seq, got.ETag, err, v.ETag)
		}
	})
}
