package secondaryindex_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
	"github.com/tablepatterns/tablepatterns/patterns/internal/testbed"
	"github.com/tablepatterns/tablepatterns/patterns/secondaryindex"
	"github.com/tablepatterns/tablepatterns/repo"
)

// Attacks "the error names the entity's PartitionKey and primary copy and says that its
// ETag changed" (TestIntraStaleETagErrorNamesTheEntity covers the moved copy and the
// primary, both refused by Intra's own read) on the path where the service refuses: the
// value was read through a copy that still exists under the same key, and another writer
// changed the entity (not that copy's key) since. The guarded action is the copy's, so the
// 412 comes from the service, for the copy's RowKey.
func TestIntraStaleETagViaUnmovedCopyNamesTheEntity(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	x := b.intra(t, byEmail, byLast)
	if err := x.Insert(b.Ctx, emp(7, "Ken", "Kwok", "kenk@contoso.com")); err != nil {
		t.Fatal(err)
	}
	viaLast := collect(t, x.Find(b.Ctx, "Sales", "last", "Kwok", nil))
	if len(viaLast) != 1 {
		t.Fatalf("Find found %d", len(viaLast))
	}
	other, err := x.Get(b.Ctx, "Sales", "empid_000007")
	if err != nil {
		t.Fatal(err)
	}
	other.Age = 61 // every copy is rewritten; no key moves
	if err := x.Update(b.Ctx, &other); err != nil {
		t.Fatal(err)
	}
	for name, write := range map[string]func(v *Employee) error{
		"update": func(v *Employee) error { v.Age = 50; return x.Update(b.Ctx, v) },
		"delete": func(v *Employee) error {
			return x.Delete(b.Ctx, v.Department, v.RowKey, &repo.DeleteOptions{ETag: v.ETag})
		},
	} {
		v := viaLast[0]
		err := write(&v)
		if !errors.Is(err, repo.ErrPreconditionFailed) {
			t.Fatalf("%s: %v, want ErrPreconditionFailed", name, err)
		}
		msg := err.Error()
		for _, want := range []string{`PartitionKey="Sales"`, `RowKey="empid_000007"`, "ETag changed"} {
			if !strings.Contains(msg, want) {
				t.Errorf("%s: %q lacks %q", name, msg, want)
			}
		}
	}
}

// A value read through any copy carries that copy's ETag: an update from it succeeds if
// nothing changed and fails with ErrPreconditionFailed if anything did, whichever copy the
// other writer went through. A value read from a partial copy cannot be written back.
func TestIntraOptimisticConcurrency(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	byLastFull := byLast
	x := b.intra(t, byEmail, byLastFull)
	if err := x.Insert(b.Ctx, emp(7, "Ken", "Kwok", "kenk@contoso.com")); err != nil {
		t.Fatal(err)
	}
	viaLast := collect(t, x.Find(b.Ctx, "Sales", "last", "Kwok", nil))
	viaID, err := x.Get(b.Ctx, "Sales", "empid_000007")
	if err != nil || len(viaLast) != 1 {
		t.Fatal(len(viaLast), err)
	}
	a, c := viaLast[0], viaID
	a.Age = 30
	if err := x.Update(b.Ctx, &a); err != nil {
		t.Fatalf("update from the copy it was read through: %v", err)
	}
	c.FirstName = "Kenneth"
	if err := x.Update(b.Ctx, &c); !errors.Is(err, repo.ErrPreconditionFailed) {
		t.Fatalf("stale update: %v, want ErrPreconditionFailed", err)
	}
	// The written value's ETag is current again: a second update from it succeeds.
	a.Age = 31
	if err := x.Update(b.Ctx, &a); err != nil {
		t.Fatalf("update after update: %v", err)
	}
	// A change of the indexed value through the copy it was read from.
	a.LastName = "Kwoh"
	if err := x.Update(b.Ctx, &a); err != nil {
		t.Fatal(err)
	}
	// A stale delete is refused too.
	if err := x.Delete(b.Ctx, "Sales", viaLast[0].RowKey, &repo.DeleteOptions{ETag: viaLast[0].ETag}); !errors.Is(err, repo.ErrPreconditionFailed) {
		t.Fatalf("stale delete: %v", err)
	}
	// Without an ETag: last writer wins.
	noTag := emp(7, "K", "Kwok", "kenk@contoso.com")
	if err := x.Update(b.Ctx, noTag); err != nil {
		t.Fatal(err)
	}
	// Partial copies cannot be written back.
	partial, err := x.Lookup(b.Ctx, "Sales", "email", "kenk@contoso.com")
	if err != nil {
		t.Fatal(err)
	}
	mark := len(b.rows(t, "Sales"))
	if err := x.Update(b.Ctx, &partial); !errors.Is(err, repo.ErrInvalidInput) {
		t.Fatalf("update from a partial copy: %v", err)
	}
	if len(b.rows(t, "Sales")) != mark {
		t.Fatal("rows changed")
	}
}

// Concurrent writers of one entity, changing its indexed values, never leave a stale or a
// missing copy: after they all finish, every copy matches the primary.
func TestIntraConcurrentWritersKeepCopiesConsistent(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	x := b.intra(t, byEmail, byLast)
	if err := x.Insert(b.Ctx, emp(9, "W", "L0", "w0@contoso.com")); err != nil {
		t.Fatal(err)
	}
	const writers = 12
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 3; i++ {
				e := emp(9, "W", fmt.Sprintf("L%d", w), fmt.Sprintf("w%d.%d@contoso.com", w, i))
				if err := x.Update(b.Ctx, e); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	cur, err := x.Get(b.Ctx, "Sales", "empid_000009")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"email_" + cur.Email, "empid_000009", "last_" + interKey(cur.LastName, "000009")}
	slices.Sort(want)
	if got := b.rows(t, "Sales"); !slices.Equal(got, want) {
		t.Fatalf("rows %q, want %q", got, want)
	}
}

// A write whose caller's ETag no longer matches names the entity's real
// keys (its partition and primary copy) and says that the ETag changed; it does not blame
// a missing copy, whichever copy the value was read through.
func TestIntraStaleETagErrorNamesTheEntity(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	x := b.intra(t, byEmail, byLast)
	if err := x.Insert(b.Ctx, emp(7, "Ken", "Kwok", "kenk@contoso.com")); err != nil {
		t.Fatal(err)
	}
	viaID, err := x.Get(b.Ctx, "Sales", "empid_000007")
	if err != nil {
		t.Fatal(err)
	}
	viaLast := collect(t, x.Find(b.Ctx, "Sales", "last", "Kwok", nil))
	other := viaID
	other.LastName = "Kwoh" // moves the "last" copy the second reader read through
	if err := x.Update(b.Ctx, &other); err != nil {
		t.Fatal(err)
	}
	for name, v := range map[string]*Employee{"read through the primary": &viaID, "read through a moved copy": &viaLast[0]} {
		v.Age = 50
		err := x.Update(b.Ctx, v)
		if !errors.Is(err, repo.ErrPreconditionFailed) {
			t.Fatalf("%s: %v, want ErrPreconditionFailed", name, err)
		}
		msg := err.Error()
		for _, want := range []string{`PartitionKey="Sales"`, `RowKey="empid_000007"`, "ETag changed"} {
			if !strings.Contains(msg, want) {
				t.Errorf("%s: %q lacks %q", name, msg, want)
			}
		}
		if strings.Contains(msg, "no longer exists") || strings.Contains(msg, `PartitionKey=""`) {
			t.Errorf("%s: %q blames a missing copy or an empty partition", name, msg)
		}
	}
}

// Attacks Intra's "a reader never sees an entity under both its old and new email, nor
// under neither" at its window: Update's transaction is held at the proxy after its read;
// readers in the window find the entity under the old email only, and after it under the
// new one only.
func TestIntraWindowReadersSeeOldOrNewNeverBoth(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	x := b.intra(t, byEmail)
	reader, err := intraOn(b.Direct.Tables, b.Table, byID, []secondaryindex.Index[Employee]{byEmail}, nil)
	if err != nil {
		t.Fatal(err)
	}
	e := emp(821, "Gus", "Win", "old@contoso.com")
	if err := x.Insert(b.Ctx, e); err != nil {
		t.Fatal(err)
	}
	found := func(email string) bool {
		t.Helper()
		_, err := reader.Lookup(b.Ctx, "Sales", "email", email)
		if err != nil && !errors.Is(err, repo.ErrNotFound) {
			t.Fatal(err)
		}
		return err == nil
	}
	ps := b.Proxies.Table.PauseAt("Intra update transaction", faultproxy.IsBatch, 1)
	t.Cleanup(ps.Release)
	e.Email = "new@contoso.com"
	done := make(chan error, 1)
	go func() { done <- x.Update(b.Ctx, e) }()
	testbed.WaitHeld(t, ps)
	if !found("old@contoso.com") || found("new@contoso.com") {
		t.Fatal("inside the update's window the entity must be found under the old email only")
	}
	ps.Release()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if found("old@contoso.com") || !found("new@contoso.com") {
		t.Fatal("after the update the entity must be found under the new email only")
	}
}

// Attacks Intra's "every write rewrites every copy": an update that read the entity and
// is held before its transaction while another writer changes the email loses: with the
// ETag it read, ErrPreconditionFailed; without, it reads again and wins (last writer),
// and in both cases every copy matches the primary.
func TestIntraWindowConcurrentUpdate(t *testing.T) {
	t.Parallel()
	for _, withETag := range []bool{true, false} {
		t.Run(fmt.Sprintf("etag=%v", withETag), func(t *testing.T) {
			t.Parallel()
			b := setup(t, true)
			x := b.intra(t, byEmail)
			other, err := intraOn(b.Direct.Tables, b.Table, byID, []secondaryindex.Index[Employee]{byEmail}, nil)
			if err != nil {
				t.Fatal(err)
			}
			e := emp(822, "Hal", "Win", "a@contoso.com")
			if err := x.Insert(b.Ctx, e); err != nil {
				t.Fatal(err)
			}
			mine := *e
			if !withETag {
				mine.ETag = ""
			}
			mine.Email = "mine@contoso.com"
			ps := b.Proxies.Table.PauseAt("held update", faultproxy.IsBatch, 1)
			t.Cleanup(ps.Release)
			done := make(chan error, 1)
			go func() { done <- x.Update(b.Ctx, &mine) }()
			testbed.WaitHeld(t, ps)
			theirs := *e
			theirs.ETag, theirs.Email = "", "theirs@contoso.com"
			if err := other.Update(b.Ctx, &theirs); err != nil {
				t.Fatal(err)
			}
			ps.Release()
			err = <-done
			want := "mine@contoso.com"
			if withETag {
				if !errors.Is(err, repo.ErrPreconditionFailed) {
					t.Fatalf("stale update: %v, want ErrPreconditionFailed", err)
				}
				want = "theirs@contoso.com"
			} else if err != nil {
				t.Fatal(err)
			}
			got, err := x.Get(b.Ctx, "Sales", "empid_000822")
			if err != nil || got.Email != want {
				t.Fatalf("primary %+v %v, want email %s", got, err, want)
			}
			if rows := b.rows(t, "Sales"); len(rows) != 2 || !slices.Contains(rows, "email_"+want) {
				t.Fatalf("rows %q, want the primary and email_%s", rows, want)
			}
		})
	}
}
