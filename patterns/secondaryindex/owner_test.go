package secondaryindex_test

import (
	"errors"
	"testing"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
	"github.com/tablepatterns/tablepatterns/patterns/internal/testbed"
	"github.com/tablepatterns/tablepatterns/patterns/secondaryindex"
	"github.com/tablepatterns/tablepatterns/repo"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// A partial unique index (its copies carry FirstName and Email, not the primary value):
// the owner is "told" by content equality. Two employees named Amy share an email in
// data older than the index. The one copy then equals both projections, so copyOwner
// calls it owned by each of them: Verify sees no Conflict and no drift although two
// entities hold one unique value, and archiving the second Amy deletes the first Amy's
// copy ("Removal never deletes another entity's copy"; DESIGN: content equality cannot
// prove that the stored state is ours). Fixed: Verify reports both as a Conflict; the
// move's deletion is kept, by decision (see below and the package documentation).
func TestOwnerPartialCopyEqualToTwoProjections(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	x := b.intra(t, byMailPartial)
	if err := x.Insert(b.Ctx, emp(1, "Amy", "Smith", "amy@contoso.com")); err != nil {
		t.Fatal(err)
	}
	// The second Amy is older data (stored around the index), sharing the email.
	if err := b.Raw.Insert(b.Ctx, &codec.Entity{PartitionKey: "Sales", RowKey: "empid_000002",
		Properties: map[string]any{"EmployeeId": "000002", "FirstName": "Amy", "LastName": "Jones", "Age": int32(22), "Email": "amy@contoso.com"}}); err != nil {
		t.Fatal(err)
	}
	r, err := x.Verify(b.Ctx, "Sales", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("verify: %+v", r)
	if r.Conflict == 0 && r.Drift() == 0 {
		t.Errorf("verify reads Sales clean (conflict 0, drift 0) while employees 000001 and 000002 share the unique email: the copy counts as each one's")
	}
	if r.Conflict != 2 || r.Drift() != 2 {
		t.Errorf("verify: %+v, want both employees reported as a Conflict (the copy equals both projections: it proves neither's)", r)
	}
	// The move removes a partial copy equal to the
	// archived entity's projection. Keeping it would leave every archived entity of a
	// partial unique index findable by its value; deleting it loses the other entity's
	// copy only in this state, which Verify reports as a Conflict. So the expectation
	// is not "the copy stays" but: the move leaves no copy the archived entity could be
	// found by, Verify then reports employee 000001's copy as Missing, and Repair
	// writes it back.
	a, target := b.Archiver(x)
	b.MustMove(a, target, "Sales", "empid_000002")
	if got, err := x.Lookup(b.Ctx, "Sales", "mail", "amy@contoso.com"); !errors.Is(err, repo.ErrNotFound) {
		t.Fatalf("after archiving employee 000002, its value still finds %+v %v", got, err)
	}
	r, err = x.Repair(b.Ctx, "Sales", nil)
	if err != nil || r.Missing != 1 || r.Conflict != 0 || r.Repaired != 1 || len(r.Samples) != 1 || r.Samples[0].RowKey != "empid_000001" {
		t.Fatalf("repair after the move: %+v %v, want employee 000001's copy Missing and written", r, err)
	}
	if got, err := x.Lookup(b.Ctx, "Sales", "mail", "amy@contoso.com"); err != nil || got.FirstName != "Amy" {
		t.Fatalf("after the repair, lookup gives %+v %v, want employee 000001's copy", got, err)
	}
	if r, err := x.Verify(b.Ctx, "Sales", nil); err != nil || r.Drift() != 0 || r.Entities != 1 {
		t.Fatalf("verify after the repair: %+v %v, want employee 000001 alone and clean", r, err)
	}
}

// A copy names an owner that no longer holds the value (its primary was deleted around
// the package, the drift Verify and Repair exist for), while another employee now holds
// the value. The name is worth nothing: the copy is drift, Repair rewrites it as the
// holder's, and Lookup never returns an employee that does not exist.
func TestOwnerCopyOfVanishedOwnerNamesNobody(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	x := b.intra(t, byEmail)
	for _, e := range []*Employee{emp(3, "Cy", "Gone", "x@contoso.com"), emp(2, "Bo", "Here", "y@contoso.com")} {
		if err := x.Insert(b.Ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	// Writes around the package: employee 3's primary is deleted (its copy stays), and
	// employee 2's email becomes x@.
	if err := b.Raw.Delete(b.Ctx, "Sales", "empid_000003", nil); err != nil {
		t.Fatal(err)
	}
	if err := b.Raw.Upsert(b.Ctx, &codec.Entity{PartitionKey: "Sales", RowKey: "empid_000002",
		Properties: map[string]any{"Email": "x@contoso.com"}}, &repo.UpsertOptions{Mode: repo.Merge}); err != nil {
		t.Fatal(err)
	}
	r, err := x.Repair(b.Ctx, "Sales", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("repair: %+v", r)
	after, err := x.Verify(b.Ctx, "Sales", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("verify after repair: %+v", after)
	got, err := x.Lookup(b.Ctx, "Sales", "email", "x@contoso.com")
	if err != nil || got.EmployeeID != "000002" {
		t.Fatalf("after Repair, lookup of x@ gives %+v %v, want employee 000002 (employee 000003 no longer exists; verify after repair: drift %d, conflict %d)",
			got, err, after.Drift(), after.Conflict)
	}
}

// An encrypted indexed type: the copy's plaintext EmployeeId is not bound to it, so a
// writer of the table (who holds no key) rewrites employee A's ssn copy to name an
// employee that does not exist. A name that does not hold the value names nobody: the
// copy is drift, and archiving A removes it, so after the move no lookup finds A's
// decrypted SSN ("an archive move of an entity then leaves no copy that a lookup can
// find").
func TestOwnerEncryptedCopyRenamedToNobodyGoesWithTheMove(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	x := secretIntra(t, b, true)
	if err := x.Insert(b.Ctx, &secret{Dept: "Sales", ID: "000001", SSN: "078-05-1120", SSNIndex: "h1"}); err != nil {
		t.Fatal(err)
	}
	if err := b.Raw.Upsert(b.Ctx, &codec.Entity{PartitionKey: "Sales", RowKey: "ssn_h1",
		Properties: map[string]any{"EmployeeId": "999999"}}, &repo.UpsertOptions{Mode: repo.Merge}); err != nil {
		t.Fatal(err)
	}
	got, lerr := x.Lookup(b.Ctx, "Sales", "ssn", "h1")
	t.Logf("the renamed copy reads %+v %v", got, lerr)
	r, err := x.Verify(b.Ctx, "Sales", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("verify: %+v", r)
	a, target := b.Archiver(x)
	b.MustMove(a, target, "Sales", "id_000001")
	if got, err := x.Lookup(b.Ctx, "Sales", "ssn", "h1"); err == nil {
		t.Fatalf("after archiving A, its value still finds %+v (SSN decrypted: %q); verify before the move said drift %d, conflict %d",
			got, got.SSN, r.Drift(), r.Conflict)
	}
}

// The window between Removal's read of a copy (A's) and the move's transaction: held at
// the proxy while a bulk Backfill hands the copy to employee B. The transaction's delete
// of the copy is conditional on the ETag Removal read: it fails, the move starts over,
// and the copy, now B's, is kept.
func TestOwnerCopyTakenOverBetweenRemovalAndTransaction(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	x := b.intra(t, byEmail)
	if err := x.Insert(b.Ctx, emp(1, "Ann", "Lee", "shared@contoso.com")); err != nil {
		t.Fatal(err)
	}
	direct, err := intraOn(b.Direct.Tables, b.Table, byID, []secondaryindex.Index[Employee]{byEmail}, &repo.Options{Retry: testbed.FastRetry()})
	if err != nil {
		t.Fatal(err)
	}
	a, target := b.Archiver(x)
	b.MustMoveHeld(a, target, "Sales", "empid_000001", func() {
		if err := direct.Backfill(b.Ctx, []*Employee{emp(2, "Bob", "Ray", "shared@contoso.com")}); err != nil {
			t.Fatal(err)
		}
	})
	if got, err := x.Lookup(b.Ctx, "Sales", "email", "shared@contoso.com"); err != nil || got.EmployeeID != "000002" {
		t.Fatalf("B's copy after A's held move: %+v %v", got, err)
	}
}

// The window between a backfill's read of a unique copy whose owner is unknown (forged
// garbage under B's value) and its transaction: held while the copy is rewritten as
// employee C's (C holds the value too). The backfill's replace is conditional on the ETag
// it read: it fails, the round reads the copy again, finds C's, and leaves it.
func TestOwnerUnknownCopyBecomesAnothersBeforeBackfillWrites(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	x := b.intra(t, byEmail)
	direct, err := intraOn(b.Direct.Tables, b.Table, byID, nil, &repo.Options{Retry: testbed.FastRetry()})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range []*Employee{emp(2, "Bob", "Ray", "v@contoso.com"), emp(3, "Cy", "Fox", "v@contoso.com")} {
		if err := direct.Insert(b.Ctx, e); err != nil { // data older than the email index
			t.Fatal(err)
		}
	}
	if err := b.Raw.Insert(b.Ctx, &codec.Entity{PartitionKey: "Sales", RowKey: "email_v@contoso.com",
		Properties: map[string]any{"Age": "not a number"}}); err != nil {
		t.Fatal(err)
	}
	ps := b.Proxies.Table.PauseAt("backfill transaction", faultproxy.IsBatch, 1)
	t.Cleanup(ps.Release)
	done := make(chan error, 1)
	go func() {
		_, err := x.BackfillPartition(b.Ctx, "Sales", &secondaryindex.BackfillOptions{Limit: 1, PageSize: 1})
		done <- err
	}()
	testbed.WaitHeld(t, ps)
	c := emp(3, "Cy", "Fox", "v@contoso.com")
	if err := b.Raw.Upsert(b.Ctx, &codec.Entity{PartitionKey: "Sales", RowKey: "email_v@contoso.com",
		Properties: map[string]any{"EmployeeId": c.EmployeeID, "FirstName": c.FirstName, "LastName": c.LastName, "Email": c.Email}}, nil); err != nil {
		t.Fatal(err)
	}
	ps.Release()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got, err := x.Lookup(b.Ctx, "Sales", "email", "v@contoso.com"); err != nil || got.EmployeeID != "000003" {
		t.Fatalf("the copy after the held backfill of B: %+v %v, want C's (000003)", got, err)
	}
}

// A copy names an owner that is live but holds another value now (its email changed
// around the package): it is not that entity's any more. Backfill, which does not load
// the partition, reads the named owner's primary row (one point read) and takes the
// copy for the entity that has the value, instead of leaving it as "another's".
func TestOwnerBackfillTakesCopyWhoseNamedOwnerHoldsAnotherValue(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	x := b.intra(t, byEmail)
	for _, e := range []*Employee{emp(3, "Cy", "Moved", "x@contoso.com"), emp(2, "Bo", "Here", "y@contoso.com")} {
		if err := x.Insert(b.Ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	// Around the package: employee 3 now has z@ (its x@ copy stays), employee 2 has x@.
	for id, mail := range map[string]string{"empid_000003": "z@contoso.com", "empid_000002": "x@contoso.com"} {
		if err := b.Raw.Upsert(b.Ctx, &codec.Entity{PartitionKey: "Sales", RowKey: id, Properties: map[string]any{"Email": mail}},
			&repo.UpsertOptions{Mode: repo.Merge}); err != nil {
			t.Fatal(err)
		}
	}
	mark := b.Proxies.Table.Count()
	cp, err := x.BackfillPartition(b.Ctx, "Sales", &secondaryindex.BackfillOptions{Limit: 1, PageSize: 1}) // employee 2 only
	if err != nil || cp.Written != 1 {
		t.Fatalf("backfill of employee 2: %+v %v, want it written", cp, err)
	}
	// 1 page, 1 read of the copy, 1 point read of the named owner, 1 transaction.
	if n := requestsTo(b.Proxies.Table, mark); n != 4 {
		t.Errorf("the backfill of one entity sent %d requests, want 4", n)
	}
	if got, err := x.Lookup(b.Ctx, "Sales", "email", "x@contoso.com"); err != nil || got.EmployeeID != "000002" {
		t.Fatalf("lookup of x@ after the backfill: %+v %v, want employee 000002", got, err)
	}
}

// A Conflict counts in Drift, and a verify job logs it as drift: two employees share an
// email in data older than the index, so one of them cannot be found by it.
func TestOwnerVerifyJobCountsConflictAsDrift(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	q, _ := b.Queue()
	old := b.intra(t)
	for _, e := range []*Employee{emp(1, "Ann", "Lee", "same@contoso.com"), emp(2, "Bo", "Kim", "same@contoso.com")} {
		if err := old.Insert(b.Ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	core, logs := observer.New(zapcore.InfoLevel)
	x := b.intraLogged(t, zap.New(core), q, byEmail)
	if _, err := x.BackfillPartition(b.Ctx, "Sales", nil); err != nil {
		t.Fatal(err)
	}
	if r, err := x.Verify(b.Ctx, "Sales", nil); err != nil || r.Conflict != 1 || r.Drift() != 1 {
		t.Fatalf("verify: %+v %v, want one Conflict counted in Drift", r, err)
	}
	w := b.Worker(q, x.Register)
	if err := x.StartVerify(b.Ctx, "Sales"); err != nil {
		t.Fatal(err)
	}
	testbed.Drain(t, w)
	lines := logs.FilterMessage("index verify").All()
	if len(lines) != 1 {
		t.Fatalf("%d verify lines, want 1", len(lines))
	}
	if f := lines[0].ContextMap(); f["conflict"] != int64(1) || f["drift"] != int64(1) {
		t.Fatalf("verify line %v, want conflict 1 and drift 1", f)
	}
}

// With the owner property encrypted, a writer of the table without the key who renames
// a copy's owner breaks the copy's authentication: no lookup returns it (so no decrypted
// value comes out), Verify reports it Stale, Repair writes it again as the entity's, and
// an archive move then removes it.
func TestOwnerEncryptedOwnerPropertyBindsTheCopy(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	byID := secondaryindex.Index[boundSecret]{Name: "id", Value: func(s *boundSecret) string { return s.ID }}
	bySSN := secondaryindex.Index[boundSecret]{Name: "ssn", Value: func(s *boundSecret) string { return s.SSNIndex }}
	x, err := intraOn(b.Clients.Tables, b.Table, byID, []secondaryindex.Index[boundSecret]{bySSN},
		&repo.Options{Encryption: &codec.Encryption{Key: localKey(t)}, Retry: testbed.FastRetry()})
	if err != nil {
		t.Fatal(err)
	}
	if err := x.Insert(b.Ctx, &boundSecret{Dept: "Sales", ID: "000001", SSN: "078-05-1120", SSNIndex: "h1"}); err != nil {
		t.Fatal(err)
	}
	if err := b.Raw.Upsert(b.Ctx, &codec.Entity{PartitionKey: "Sales", RowKey: "ssn_h1",
		Properties: map[string]any{"EmployeeId": "999999"}}, &repo.UpsertOptions{Mode: repo.Merge}); err != nil {
		t.Fatal(err)
	}
	if got, err := x.Lookup(b.Ctx, "Sales", "ssn", "h1"); err == nil || got.SSN != "" {
		t.Fatalf("the renamed copy reads %+v %v, want a refusal", got, err)
	}
	r, err := x.Repair(b.Ctx, "Sales", nil)
	if err != nil || r.Stale != 1 || r.Repaired != 1 {
		t.Fatalf("repair: %+v %v, want the renamed copy Stale and rewritten", r, err)
	}
	if got, err := x.Lookup(b.Ctx, "Sales", "ssn", "h1"); err != nil || got.ID != "000001" {
		t.Fatalf("after the repair the copy reads %+v %v, want employee 000001's", got, err)
	}
	a, target := b.Archiver(x)
	b.MustMove(a, target, "Sales", "id_000001")
	if got, err := x.Lookup(b.Ctx, "Sales", "ssn", "h1"); !errors.Is(err, repo.ErrNotFound) {
		t.Fatalf("after the move the value still finds %+v %v", got, err)
	}
}

// A partial unique copy equal to the projection of exactly one of two employees that
// share its value: that one is its owner, and only the other is a Conflict (before, the
// other read as Stale, which Repair "fixes" by taking the copy over).
func TestOwnerVerifyPartialCopyOfOneOfTwoIsAConflictForTheOther(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	x := b.intra(t, byMailPartial)
	if err := x.Insert(b.Ctx, emp(1, "Jun", "Jones", "shared@contoso.com")); err != nil {
		t.Fatal(err)
	}
	if err := x.Backfill(b.Ctx, []*Employee{emp(3, "Kim", "Lee", "shared@contoso.com")}); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		r, err := x.Repair(b.Ctx, "Sales", nil)
		if err != nil || r.Conflict != 1 || r.Drift() != 1 || r.Repaired != 0 || r.Samples[0].RowKey != "empid_000001" {
			t.Fatalf("repair %d: %+v %v, want employee 000001 a Conflict and nothing written", i, r, err)
		}
	}
	if got, err := x.Lookup(b.Ctx, "Sales", "mail", "shared@contoso.com"); err != nil || got.FirstName != "Kim" {
		t.Fatalf("the copy after the repairs: %+v %v, want Kim's", got, err)
	}
}

// One rule decides who owns a unique copy, for Verify, BackfillPartition, Repair and
// Removal alike. An entity type with encrypted fields: employee A holds the blind-index
// value "h1" and its copy; employee B, stored before the index (data older than it),
// holds "h1" too. The copy decrypts and names A as its owner, so every operation must
// see it as A's: Verify reports B's value as a Conflict (not clean), Backfill and Repair
// leave the copy with A, and an archive move of A removes it while one of B leaves it.
// (Before one rule decided, Verify and Backfill gave up on encrypted types: Verify read B
// as clean, Backfill handed the copy to B and back, and Removal called it A's.)
func TestIntraEncryptedUniqueCopyOneOwnerRule(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	old, x := secretIntra(t, b, false), secretIntra(t, b, true)
	if err := x.Insert(b.Ctx, &secret{Dept: "Sales", ID: "000001", SSN: "078-05-1120", SSNIndex: "h1"}); err != nil {
		t.Fatal(err)
	}
	if err := old.Insert(b.Ctx, &secret{Dept: "Sales", ID: "000002", SSN: "219-09-9999", SSNIndex: "h1"}); err != nil {
		t.Fatal(err)
	}
	owner := func(when string) {
		t.Helper()
		got, err := x.Lookup(b.Ctx, "Sales", "ssn", "h1")
		if err != nil || got.ID != "000001" || got.SSN != "078-05-1120" {
			t.Fatalf("%s: the copy of h1 reads %+v %v, want A's (000001)", when, got, err)
		}
	}

	r, err := x.Verify(b.Ctx, "Sales", nil)
	if err != nil {
		t.Fatal(err)
	}
	if r.Conflict != 1 || len(r.Samples) != 1 || r.Samples[0].Drift != secondaryindex.Conflict || r.Samples[0].RowKey != "id_000002" {
		t.Fatalf("verify: %+v, want one Conflict for B (id_000002): B's value is held by A's copy", r)
	}

	cp, err := x.BackfillPartition(b.Ctx, "Sales", nil)
	if err != nil {
		t.Fatal(err)
	}
	owner("after the backfill")
	if cp.Written != 1 {
		t.Fatalf("backfill wrote %d entities, want 1 (A rewritten; B left: its value is A's)", cp.Written)
	}
	if _, err := x.Repair(b.Ctx, "Sales", nil); err != nil {
		t.Fatal(err)
	}
	owner("after the repair")

	removal := func(rk string) int {
		t.Helper()
		rm, err := x.Removal(b.Ctx, b.row(t, "Sales", rk))
		if err != nil {
			t.Fatalf("removal of %s: %v", rk, err)
		}
		return len(rm.Actions)
	}
	if n := removal("id_000001"); n != 1 {
		t.Fatalf("a move of A removes %d copies, want 1 (its own h1 copy)", n)
	}
	if n := removal("id_000002"); n != 0 {
		t.Fatalf("a move of B removes %d copies, want 0 (the h1 copy is A's)", n)
	}
}
