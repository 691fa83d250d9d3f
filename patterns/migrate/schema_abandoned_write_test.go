package migrate

import (
	"context"
	"testing"
)

// abandonedSchemaWrite abandons an Upsert of Seq 5 of k through f.s with its request
// held at the proxy, then writes Seq 5 again and Seq 6 (acknowledged), and returns the
// held request, not yet landed.
func (f *stagedFix) abandonedSchemaWrite(t *testing.T, k [2]string) *lateRequest {
	t.Helper()
	ctx := f.b.Ctx
	v := func(seq int64) *EmployeeSplit {
		return &EmployeeSplit{Department: k[0], EmployeeID: k[1], FirstName: "F" + k[1], LastName: "L", Seq: seq}
	}
	l := holdFirst(t, f.b.Proxy(), entityWrite(f.b.Table, k[1]))
	l.abandon(t, ctx, func(ctx context.Context) error { return f.s.Upsert(ctx, v(5)) })
	for _, seq := range []int64{5, 6} {
		if err := f.s.Upsert(ctx, v(seq)); err != nil {
			t.Fatalf("write of Seq %d: %v", seq, err)
		}
	}
	if got, err := f.s.Get(ctx, k[0], k[1]); err != nil || got.Seq != 6 {
		t.Fatalf("Get after the writes = Seq %d, %v; want 6", got.Seq, err)
	}
	return l
}

// mustReadAtLeast6 checks that the reader through f.s reads Seq 6 or later once the
// abandoned write of Seq 5 landed.
func (f *stagedFix) mustReadAtLeast6(t *testing.T, k [2]string) {
	t.Helper()
	if v, err := f.s.Get(f.b.Ctx, k[0], k[1]); err != nil || v.Seq < 6 {
		t.Errorf("Get once the abandoned write landed = Seq %d, %v: Seq %d after 6", v.Seq, err, v.Seq)
	}
}

// TestSchemaReaderNeverStepsBackWhenAnAbandonedWriteLandsLate: the request of an Upsert
// through the schema migration reaches the service, which does not answer before the
// client gives up on it; the application writes again, then a newer version; only then
// does the service apply the abandoned request. The reader never reads the older
// version after the newer one: in a stage that writes the from version (DualWrite), in
// one that writes the latest (CutOver, Done), and through a Schema without stages.
func TestSchemaReaderNeverStepsBackWhenAnAbandonedWriteLandsLate(t *testing.T) {
	t.Parallel()
	for _, stage := range []Stage{"", DualWrite, CutOver, Done} {
		name := string(stage)
		if stage == "" {
			name = "no stages"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := setupStaged(t, true, 0)
			keys, _ := f.planned(t, 10, 1)
			if stage == "" {
				f.s = f.newSchema(t, "", true, 0)
			} else {
				f.advanceTo(t, stage)
				if _, err := f.s.WaitSettled(f.b.Ctx); err != nil {
					t.Fatal(err)
				}
			}
			k := keys[3]
			f.abandonedSchemaWrite(t, k).land(t, f.b.Ctx)
			f.mustReadAtLeast6(t, k)
		})
	}
}

// TestSchemaAbandonedWriteLandingAfterTheRewriteLeavesNoEntityBelowTheLatest: a write of
// the from version made at DualWrite is abandoned, written again and newer, and the
// migration goes on to CutOver (Backfill's rewrite upgraded the entity, Verify found
// none below the latest); only then does the service apply the abandoned request. The
// entity stays at the latest version with its latest value: CutOver is never reached
// with an entity below the latest, not even by a request sent before it.
func TestSchemaAbandonedWriteLandingAfterTheRewriteLeavesNoEntityBelowTheLatest(t *testing.T) {
	t.Parallel()
	f := setupStaged(t, true, 0)
	keys, _ := f.planned(t, 10, 1)
	f.advanceTo(t, DualWrite)
	if _, err := f.s.WaitSettled(f.b.Ctx); err != nil {
		t.Fatal(err)
	}
	k := keys[3]
	l := f.abandonedSchemaWrite(t, k)
	f.advanceTo(t, CutOver)
	l.land(t, f.b.Ctx)
	if v := f.storedVersion(t, k[0], k[1]); v != f.s.Latest() {
		t.Errorf("at CutOver, once the abandoned write landed, the entity is stored at version %d, below the latest %d", v, f.s.Latest())
	}
	f.mustReadAtLeast6(t, k)
}

// TestSchemaAbandonedWriteLandingAfterTheDowngradeLeavesNoEntityAtTheLatest: a write of
// the latest version made at Backfill is abandoned, written again and newer, and the
// migration is aborted (the downgrade brought the entity back to the from version,
// Aborted recorded); only then does the service apply the abandoned request. The entity
// stays at the from version with its latest value: Aborted never ends with an entity at
// the latest.
func TestSchemaAbandonedWriteLandingAfterTheDowngradeLeavesNoEntityAtTheLatest(t *testing.T) {
	t.Parallel()
	f := setupStaged(t, true, 0)
	keys, _ := f.planned(t, 10, 1)
	f.advanceTo(t, Backfill)
	if _, err := f.s.WaitSettled(f.b.Ctx); err != nil {
		t.Fatal(err)
	}
	k := keys[3]
	l := f.abandonedSchemaWrite(t, k)
	if _, err := f.s.Abort(f.b.Ctx); err != nil {
		t.Fatal(err)
	}
	f.advanceTo(t, Aborted)
	l.land(t, f.b.Ctx)
	if v := f.storedVersion(t, k[0], k[1]); v != f.s.from() {
		t.Errorf("at Aborted, once the abandoned write landed, the entity is stored at version %d, not the from version %d", v, f.s.from())
	}
	f.mustReadAtLeast6(t, k)
}
