package repo_test

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"

	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/repo/filter"
)

func TestPointOperations(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	emps := table[Employee](t, b, nil)
	ctx := b.ctx

	e := employee("Sales", "000223")
	if err := emps.Insert(ctx, e); err != nil {
		t.Fatalf("insert: %v", err)
	}
	if e.ETag == "" {
		t.Fatal("insert did not store the new ETag in the value")
	}
	got, err := emps.Get(ctx, "Sales", "000223")
	if err != nil {
		t.Fatalf("get: %v", err)
	}
	if got.ETag != e.ETag || got.Timestamp.IsZero() {
		t.Fatalf("get: ETag %q (want %q), Timestamp %v", got.ETag, e.ETag, got.Timestamp)
	}
	if got.Salary != e.Salary || !got.HireDate.Equal(e.HireDate) || got.Email != e.Email || got.Age != e.Age {
		t.Fatalf("get returned %+v, want %+v", got, e)
	}

	if err := emps.Insert(ctx, employee("Sales", "000223")); !errors.Is(err, repo.ErrAlreadyExists) {
		t.Fatalf("second insert: %v, want ErrAlreadyExists", err)
	}
	var re *azcore.ResponseError
	if err := emps.Insert(ctx, employee("Sales", "000223")); !errors.As(err, &re) || re.StatusCode != 409 {
		t.Fatalf("errors.As must reach the *azcore.ResponseError: %v", err)
	}

	// Conditional update with the value's ETag; a stale ETag loses.
	stale := got
	got.Age = 35
	if err := emps.Update(ctx, &got, nil); err != nil {
		t.Fatalf("update: %v", err)
	}
	if got.ETag == stale.ETag {
		t.Fatal("update did not refresh the ETag")
	}
	stale.Age = 99
	if err := emps.Update(ctx, &stale, nil); !errors.Is(err, repo.ErrPreconditionFailed) {
		t.Fatalf("stale update: %v, want ErrPreconditionFailed", err)
	}
	if err := emps.Update(ctx, &stale, &repo.UpdateOptions{Unconditional: true}); err != nil {
		t.Fatalf("unconditional update: %v", err)
	}

	// Merge keeps what is not sent; Replace removes it.
	partial := Employee{Department: "Sales", EmployeeID: "000223", FirstName: "June"}
	if err := emps.Upsert(ctx, &partial, &repo.UpsertOptions{Mode: repo.Merge, Properties: []string{"FirstName"}}); err != nil {
		t.Fatalf("merge: %v", err)
	}
	got, _ = emps.Get(ctx, "Sales", "000223")
	if got.FirstName != "June" || got.LastName != "Jones" || got.Age != 99 {
		t.Fatalf("after merge: %+v", got)
	}
	if err := emps.Upsert(ctx, &partial, &repo.UpsertOptions{Properties: []string{"FirstName"}}); !errors.Is(err, repo.ErrInvalidInput) {
		t.Fatalf("replace restricted to some properties must be refused: %v", err)
	}
	if err := emps.Upsert(ctx, &partial, nil); err != nil {
		t.Fatalf("replace: %v", err)
	}
	got, _ = emps.Get(ctx, "Sales", "000223")
	if got.LastName != "" || got.Email != "" {
		t.Fatalf("replace kept removed properties: %+v", got)
	}

	// Update of a missing entity never inserts it.
	if err := emps.Update(ctx, employee("Sales", "404"), &repo.UpdateOptions{Unconditional: true}); !errors.Is(err, repo.ErrNotFound) {
		t.Fatalf("update of a missing entity: %v, want ErrNotFound", err)
	}

	// Deletes.
	if err := emps.Delete(ctx, "Sales", "000223", &repo.DeleteOptions{ETag: stale.ETag}); !errors.Is(err, repo.ErrPreconditionFailed) {
		t.Fatalf("delete with stale ETag: %v", err)
	}
	if err := emps.Delete(ctx, "Sales", "000223", &repo.DeleteOptions{ETag: got.ETag}); err != nil {
		t.Fatalf("delete: %v", err)
	}
	if _, err := emps.Get(ctx, "Sales", "000223"); !errors.Is(err, repo.ErrNotFound) {
		t.Fatalf("get after delete: %v, want ErrNotFound", err)
	}
	if err := emps.Delete(ctx, "Sales", "000223", nil); !errors.Is(err, repo.ErrNotFound) {
		t.Fatalf("delete of a missing entity: %v, want ErrNotFound", err)
	}
	if err := emps.DeleteIfExists(ctx, "Sales", "000223"); err != nil {
		t.Fatalf("delete-if-exists of a missing entity: %v", err)
	}
}

// Keys with quotes, spaces, %, + and non-ASCII round-trip through every operation
// (aztables' own EDMEntity and transaction code do not: DESIGN.md "Traps").
func TestAwkwardKeysRoundTrip(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	emps := table[Employee](t, b, nil)
	ctx := b.ctx
	for _, k := range []struct{ pk, rk string }{
		{"o'brien", "it's"},
		{"a b", "c d"},
		{"50%", "100%25"},
		{"a+b", "1+1=2"},
		{"営業部", "社員_ü_😀"},
		{"''", "'"},
		{"x&y=z", "(a)"},
	} {
		e := employee(k.pk, k.rk)
		if err := emps.Insert(ctx, e); err != nil {
			t.Fatalf("%q/%q insert: %v", k.pk, k.rk, err)
		}
		got, err := emps.Get(ctx, k.pk, k.rk)
		if err != nil || got.Department != k.pk || got.EmployeeID != k.rk {
			t.Fatalf("%q/%q get: %+v %v", k.pk, k.rk, got, err)
		}
		got.Age++
		if err := emps.Update(ctx, &got, nil); err != nil {
			t.Fatalf("%q/%q update: %v", k.pk, k.rk, err)
		}
		list, err := emps.Collect(ctx, repo.Query{Filter: filter.Point(k.pk, k.rk)})
		if err != nil || len(list) != 1 || list[0].Age != got.Age {
			t.Fatalf("%q/%q query: %v %v", k.pk, k.rk, list, err)
		}
		// Transactions address the entity in the URL of each sub-request.
		got.Age++
		if _, err := repo.Submit(ctx, emps.UpdateAction(&got, nil)); err != nil {
			t.Fatalf("%q/%q transaction update: %v", k.pk, k.rk, err)
		}
		if _, err := repo.Submit(ctx, emps.DeleteAction(k.pk, k.rk, &repo.DeleteOptions{ETag: got.ETag})); err != nil {
			t.Fatalf("%q/%q transaction delete: %v", k.pk, k.rk, err)
		}
		if _, err := emps.Get(ctx, k.pk, k.rk); !errors.Is(err, repo.ErrNotFound) {
			t.Fatalf("%q/%q still there after the transaction delete: %v", k.pk, k.rk, err)
		}
	}
}

// Twenty writers increment one counter with read-modify-write under If-Match: every
// conflict is detected, so no increment is lost.
func TestConcurrentWritersConflict(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	emps := table[Employee](t, b, nil)
	ctx := b.ctx
	if err := emps.Insert(ctx, employee("Ops", "counter")); err != nil {
		t.Fatal(err)
	}
	const writers, each = 20, 5
	var conflicts atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; {
				e, err := emps.Get(ctx, "Ops", "counter")
				if err != nil {
					t.Error(err)
					return
				}
				e.Age++
				err = emps.Update(ctx, &e, nil)
				if errors.Is(err, repo.ErrPreconditionFailed) {
					conflicts.Add(1)
					continue
				}
				if err != nil {
					t.Error(err)
					return
				}
				i++
			}
		}()
	}
	wg.Wait()
	e, err := emps.Get(ctx, "Ops", "counter")
	if err != nil {
		t.Fatal(err)
	}
	if want := int32(34 + writers*each); e.Age != want {
		t.Fatalf("counter = %d, want %d: an update was lost", e.Age, want)
	}
	if conflicts.Load() == 0 {
		t.Fatal("20 concurrent writers never conflicted: the ETag check is not exercised")
	}
}

// Bad input is refused with a typed error before any request is sent.
func TestRefusedBeforeSending(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	emps := table[Employee](t, b, nil)
	ctx := b.ctx
	mark := b.proxy.Count()
	big := make([]byte, 40*1024)
	for i := range big {
		big[i] = 'x'
	}
	cases := map[string]func() error{
		"key with slash":     func() error { return emps.Insert(ctx, employee("a/b", "1")) },
		"key with hash":      func() error { _, err := emps.Get(ctx, "Sales", "a#b"); return err },
		"key with control":   func() error { return emps.Delete(ctx, "Sales", "a\x01", nil) },
		"key over 1 KiB":     func() error { return emps.Insert(ctx, employee("Sales", string(big[:1025]))) },
		"empty PartitionKey": func() error { _, err := emps.Get(ctx, "", "1"); return err },
		"string over 64 KiB": func() error { e := employee("Sales", "1"); e.FirstName = string(big); return emps.Insert(ctx, e) },
		"date before 1601": func() error {
			e := employee("Sales", "1")
			e.HireDate = e.HireDate.AddDate(-1000, 0, 0)
			return emps.Upsert(ctx, e, nil)
		},
		"nil entity": func() error { return emps.Insert(ctx, nil) },
		"replace subset": func() error {
			return emps.Update(ctx, employee("Sales", "1"), &repo.UpdateOptions{Properties: []string{"Age"}})
		},
	}
	for name, f := range cases {
		err := f()
		var ie *repo.InvalidInputError
		if !errors.Is(err, repo.ErrInvalidInput) || !errors.As(err, &ie) {
			t.Errorf("%s: got %v, want an *InvalidInputError", name, err)
		}
	}
	if _, err := repo.New[Employee](b.clients.Tables, "bad-name", nil); !errors.Is(err, repo.ErrInvalidInput) {
		t.Errorf("bad table name: %v", err)
	}
	if _, err := repo.New[Employee](b.clients.Tables, "tables", nil); !errors.Is(err, repo.ErrInvalidInput) {
		t.Errorf("reserved table name: %v", err)
	}
	if n := requestsSince(b.proxy, mark); n != 0 {
		t.Fatalf("%d requests were sent for refused input", n)
	}
}
