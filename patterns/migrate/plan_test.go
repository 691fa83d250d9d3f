package migrate

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/internal/errs"
	"github.com/tablepatterns/tablepatterns/repo"
)

func isInvalid(err error) bool { return errors.Is(err, errs.ErrInvalidInput) }

// TestPlanRefusesTwoOldKeysOnOneNewKey: a Keys that drops the RowKey maps two employees
// of one department to one new key; Plan refuses before writing any state.
func TestPlanRefusesTwoOldKeysOnOneNewKey(t *testing.T) {
	t.Parallel()
	f := setup(t, false, false)
	f.seed(t, 10, 2)
	m, err := New(Spec[Employee, EmployeeV2]{Name: "lossy", Service: f.b.Clients.Tables, Source: f.src, Target: f.tgt,
		Keys:      func(pk, rk string) (string, string, error) { return "x|" + pk, "", nil },
		Transform: upgrade, Control: f.m.control.Name()}, testOptions())
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Plan(f.b.Ctx); !isInvalid(err) {
		t.Fatalf("Plan = %v, want ErrInvalidInput", err)
	}
	if st, err := m.load(f.b.Ctx); err != nil || st.Stage != "" {
		t.Fatalf("state after a refused plan: %+v, %v", st, err)
	}
}

// TestPlanRefusesNewKeysOnOldKeysInOneTable: in a same-table migration, a Keys whose new
// key is the old key of another entity is refused.
func TestPlanRefusesNewKeysOnOldKeysInOneTable(t *testing.T) {
	t.Parallel()
	f := setup(t, true, false)
	f.seed(t, 10, 2)
	m, err := New(Spec[Employee, EmployeeV2]{Name: "shift", Service: f.b.Clients.Tables, Source: f.src, Target: f.tgt,
		Keys: func(pk, rk string) (string, string, error) {
			var i int
			fmt.Sscanf(rk, "emp%06d", &i)
			return pk, fmt.Sprintf("emp%06d", i+2), nil // the next employee of the department
		},
		Transform: upgrade, Control: f.m.control.Name()}, testOptions())
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Plan(f.b.Ctx); !isInvalid(err) {
		t.Fatalf("Plan = %v, want ErrInvalidInput", err)
	}
}

// TestSecondMigrationOfOneTableRefused: while one migration of a source table runs,
// planning another (of another name) meets ErrInProgress; once it ended, it may start.
func TestSecondMigrationOfOneTableRefused(t *testing.T) {
	t.Parallel()
	f := setup(t, false, false)
	f.planned(t, 10, 2)
	other := f.newMigration(t, "another", f.m.control.Name())
	if err := other.Plan(f.b.Ctx); !errors.Is(err, ErrInProgress) || !errors.Is(err, errs.ErrAlreadyExists) {
		t.Fatalf("second Plan = %v, want ErrInProgress", err)
	}
	if err := f.m.Plan(f.b.Ctx); !errors.Is(err, ErrInProgress) {
		t.Fatalf("the same Plan again = %v, want ErrInProgress", err)
	}
	if _, err := f.m.Abort(f.b.Ctx); err != nil {
		t.Fatal(err)
	}
	f.advanceTo(t, Aborted)
	if err := other.Plan(f.b.Ctx); err != nil {
		t.Fatalf("Plan after the first ended: %v", err)
	}
}

// TestForgedStateRecordRefused: a state record with a stage that does not exist, or
// reached from a stage it cannot follow, is refused by every operation (ErrInvalidInput)
// rather than read as some stage.
func TestForgedStateRecordRefused(t *testing.T) {
	t.Parallel()
	f := setup(t, false, false)
	f.planned(t, 4, 2)
	for _, forged := range [][2]string{{"done", "dualwrite"}, {"warp", "planned"}, {"cleanup", ""}} {
		r, err := f.m.control.Get(f.b.Ctx, f.m.recordKey(), recordRowKey)
		if err != nil {
			t.Fatal(err)
		}
		r.Stage, r.Previous = forged[0], forged[1]
		if err := f.m.control.Update(f.b.Ctx, &r, nil); err != nil {
			t.Fatal(err)
		}
		f.m.mu.Lock()
		f.m.fetched = time.Time{}
		f.m.mu.Unlock()
		if err := f.m.Upsert(f.b.Ctx, &Employee{Department: "dept00", EmployeeID: "emp000000"}); !isInvalid(err) {
			t.Errorf("%v: Upsert = %v, want ErrInvalidInput", forged, err)
		}
		if _, err := f.m.Advance(f.b.Ctx); !isInvalid(err) {
			t.Errorf("%v: Advance = %v, want ErrInvalidInput", forged, err)
		}
	}
}

// TestForeignRowAtCopyKeysRefusedNotReplaced: a row at the new keys of an entity that is
// not this migration's copy of it (another writer's row) is refused, never replaced.
func TestForeignRowAtCopyKeysRefusedNotReplaced(t *testing.T) {
	t.Parallel()
	f := setup(t, false, false)
	f.planned(t, 4, 2)
	f.advanceTo(t, DualWrite)
	f.settled(t)
	npk, nrk, _ := hashKeys("dept00", "emp000000")
	raw, err := repo.New[codec.Entity](f.b.Direct.Tables, f.tgt.Name(), nil)
	if err != nil {
		t.Fatal(err)
	}
	foreign := &codec.Entity{PartitionKey: npk, RowKey: nrk, Properties: map[string]any{"Name": "someone else's"}}
	if err := raw.Insert(f.b.Ctx, foreign); err != nil {
		t.Fatal(err)
	}
	if err := f.m.Upsert(f.b.Ctx, &Employee{Department: "dept00", EmployeeID: "emp000000", Seq: 5}); !isInvalid(err) {
		t.Fatalf("Upsert = %v, want ErrInvalidInput", err)
	}
	got, err := raw.Get(f.b.Ctx, npk, nrk)
	if err != nil || got.Properties["Name"] != "someone else's" || got.Properties[PropMigration] != nil {
		t.Fatalf("the foreign row was changed: %v", err)
	}
}

// TestForgedJobsRefusedBeforeAnyRequest: jobs read from a queue are validated first.
func TestForgedJobsRefusedBeforeAnyRequest(t *testing.T) {
	t.Parallel()
	f := setup(t, false, true)
	before := f.b.Proxy().Count()
	for _, j := range []Job{
		{Migration: "hash-departments", Kind: "migrate-everything"},
		{Migration: "Bad Name", Kind: KindBackfill},
		{Migration: "hash-departments", Kind: KindBackfill, Phase: phaseTarget},
		{Migration: "hash-departments", Kind: KindVerify, PartitionKeyFrom: "b", PartitionKeyTo: "a"},
		{Migration: "another", Kind: KindBackfill},
		{Migration: "hash-departments", Kind: KindAbort, Phase: phaseTarget, After: &Key{PartitionKey: strings.Repeat("x", 2000)}},
		{Migration: "hash-departments", Kind: KindBackfill, PartitionKeyFrom: "b", After: &Key{PartitionKey: "a"}},
	} {
		if _, _, err := f.m.RunJob(f.b.Ctx, j); !isInvalid(err) {
			t.Errorf("%+v: RunJob = %v, want ErrInvalidInput", j.Kind, err)
		}
	}
	if n := f.b.Proxy().Count() - before; n != 0 {
		t.Errorf("%d requests sent for refused jobs", n)
	}
}

// TestInvalidSpecRefused: New refuses a spec it cannot run, with the field named.
func TestInvalidSpecRefused(t *testing.T) {
	t.Parallel()
	f := setup(t, false, false)
	good := Spec[Employee, EmployeeV2]{Name: "ok", Service: f.b.Clients.Tables, Source: f.src, Target: f.tgt, Keys: hashKeys, Transform: upgrade}
	for name, mut := range map[string]func(*Spec[Employee, EmployeeV2]){
		"name":      func(s *Spec[Employee, EmployeeV2]) { s.Name = "Has Space" },
		"keys":      func(s *Spec[Employee, EmployeeV2]) { s.Keys = nil },
		"transform": func(s *Spec[Employee, EmployeeV2]) { s.Transform = nil },
		"service":   func(s *Spec[Employee, EmployeeV2]) { s.Service = nil },
	} {
		s := good
		mut(&s)
		if _, err := New(s, nil); !isInvalid(err) {
			t.Errorf("%s: New = %v, want ErrInvalidInput", name, err)
		}
	}
	if _, err := New(good, &Options{Refresh: -1}); !isInvalid(err) {
		t.Errorf("negative Refresh: %v", err)
	}
}
