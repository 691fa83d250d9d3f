package indexentity

import (
	"strings"
	"testing"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
	"github.com/tablepatterns/tablepatterns/patterns/internal/testbed"
	"github.com/tablepatterns/tablepatterns/queueworker"
	"github.com/tablepatterns/tablepatterns/repo"
)

// Attack on SamePartition.Repair (and so on its repair job): "Repair is idempotent and
// every write conditional on what it read, so duplicated and concurrent jobs are
// harmless". An orphan entry (its entity deleted around the index) is repaired by
// relist, which reads the entity (gone) and then the value's pages. The page read is held
// at the proxy; meanwhile a live Insert re-creates the entity under the orphan's value
// (it finds its id listed and guards the page). Released, the page read sees the guarded
// page, and the removal, conditional only on that page's ETag, unlists a live entity:
// nothing in the transaction says "the entity is still gone".
func TestAttackSamePartitionRepairGoneEntityReadBeforePages(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	direct := must(repo.New[Employee](b.Direct.Tables, b.Table, &repo.Options{Retry: fast}))
	live := must(NewSamePartition(direct, "LastName", lastName, nil))
	for _, id := range []string{"000001", "000002"} {
		if err := live.Insert(b.Ctx, emp("Sales", id, "Jones")); err != nil {
			t.Fatal(err)
		}
	}
	if err := direct.Delete(b.Ctx, "Sales", "000002", nil); err != nil { // around the index
		t.Fatal(err)
	}
	ix := b.samePartition(nil) // through the proxy
	// Verify's two queries (entities, index pages), then relist's Get of 000002 (404),
	// then relist's read of Jones' pages: the third query.
	ps := b.tableProxy().PauseAt("relist page read", faultproxy.IsListEntities, 3)
	type result struct {
		r   *Report
		err error
	}
	done := make(chan result, 1)
	go func() {
		r, err := ix.Repair(b.Ctx, "Sales", nil)
		done <- result{r, err}
	}()
	testbed.WaitHeld(t, ps)
	if err := live.Insert(b.Ctx, emp("Sales", "000002", "Jones")); err != nil {
		t.Fatal(err)
	}
	ps.Release()
	res := <-done
	t.Logf("repair: %+v %v", res.r, res.err)
	if res.err != nil {
		t.Fatal(res.err)
	}
	if ids := must(ix.IDs(b.Ctx, "Sales", "Jones")); len(ids) != 2 {
		t.Fatalf("Jones lists %v after the repair: the live entity 000002 was unlisted", ids)
	}
}

// Attack on "verify jobs write nothing", for option 2, option 1 (BlobStore) and option 3
// (a TableStore sharing the primary's table): with drift in the partition, the verify
// job's requests to the table and blob services are counted at the proxies: none may be
// a write. Forged jobs (a partition inside the shared TableStore's key space, a control
// character, a resume point on a verify) are poisoned without any table or blob request.
func TestAttackVerifyJobsSendOnlyReads(t *testing.T) {
	t.Parallel()
	for _, option := range []string{"same partition", "eventual blob", "eventual shared table"} {
		t.Run(option, func(t *testing.T) {
			t.Parallel()
			b := setup(t, true)
			b.seed("Sales", 12)
			q := b.queue()
			var (
				register func(*queueworker.Registry) error
				check    verifier
				verify   func(...string) error
				kinds    []string
				prefix   string
			)
			switch option {
			case "same partition":
				x := b.samePartition(&SamePartitionOptions{Queue: q})
				if _, err := x.BackfillPartition(b.Ctx, "Sales", nil); err != nil {
					t.Fatal(err)
				}
				register, check, kinds = x.Register, x, []string{x.BackfillKind(), x.VerifyKind(), x.RepairKind()}
				verify = func(p ...string) error { return x.StartVerify(b.Ctx, p...) }
			default:
				var s Store
				if option == "eventual blob" {
					s = b.blobStore()
				} else {
					ts := must(NewTableStore(must(repo.New[codec.Entity](b.Clients.Tables, b.Table, &repo.Options{Retry: fast})), "LastName", nil))
					prefix = ts.keyPrefix()
					s = ts
				}
				x := b.eventual(s, q)
				if _, err := x.BackfillPartition(b.Ctx, "Sales", nil); err != nil {
					t.Fatal(err)
				}
				register, check, kinds = x.Register, x, []string{x.BackfillKind(), x.VerifyKind(), x.RepairKind()}
				verify = func(p ...string) error { return x.StartVerify(b.Ctx, p...) }
			}
			b.clean(check, "Sales", 12)
			b.injectDrift("Sales")
			b.TakeMessages(q)
			if err := verify("Sales"); err != nil {
				t.Fatal(err)
			}
			w := b.Worker(q, register)
			writes := func() int {
				n := 0
				for _, p := range []*faultproxy.Proxy{b.Proxies.Table, b.Proxies.Blob} {
					n += p.CountMatching(func(r faultproxy.RequestInfo) bool { return r.Method != "GET" && r.Method != "HEAD" })
				}
				return n
			}
			before := writes()
			testbed.Drain(t, w)
			if n := writes() - before; n != 0 {
				t.Fatalf("the verify job sent %d write requests", n)
			}
			if s := w.Stats(); s.Processed != 1 || s.Poisoned != 0 {
				t.Fatalf("worker stats %+v", s)
			}
			// Forged jobs.
			forged := []map[string]string{{"pk": "Sal\u0085es"}, {"pk": "Sales", "after": "000003"}, {"pk": strings.Repeat("x", 513)}}
			if prefix != "" {
				forged = append(forged, map[string]string{"pk": prefix + "Jones"})
			}
			n := 0
			for _, p := range forged {
				for _, kind := range kinds {
					if p["after"] != "" && kind == kinds[0] {
						continue // a resume point is a backfill's own
					}
					if _, err := queueworker.Enqueue(b.Ctx, q, kind, "", p, nil); err != nil {
						t.Fatal(err)
					}
					n++
				}
			}
			mark := b.Proxies.Table.Count() + b.Proxies.Blob.Count()
			before2 := w.Stats()
			testbed.Drain(t, w)
			if got := w.Stats().Poisoned - before2.Poisoned; got != int64(n) {
				t.Fatalf("%d of %d forged jobs poisoned", got, n)
			}
			if got := b.Proxies.Table.Count() + b.Proxies.Blob.Count() - mark; got != 0 {
				t.Fatalf("%d table/blob requests for forged jobs", got)
			}
		})
	}
}

// Attack on the shared partition listing (maintain.Partitions, behind StartBackfill,
// StartVerify and StartRepair with no partition given): it guards against a listing
// that does not advance by comparing keys in Go's byte order, while the service orders
// keys by UTF-16 code units. A partition key with a character above U+FFFF (an emoji,
// UTF-16 D83D..) sorts before one with a character in U+E000–U+FFFF (a fullwidth '!',
// FF01) on the service, after it in Go. A table holding both must still be listed whole.
func TestAttackStartJobsPartitionListingUTF16Order(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	q := b.queue()
	x := b.samePartition(&SamePartitionOptions{Queue: q})
	for _, pk := range []string{"A", "\U0001F600x", "\uFF01x"} {
		if err := x.Insert(b.Ctx, emp(pk, "000001", "Jones")); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	for pk, err := range x.Partitions(b.Ctx) {
		if err != nil {
			t.Fatalf("listing after %q: %v", got, err)
		}
		got = append(got, pk)
	}
	if len(got) != 3 {
		t.Fatalf("partitions %q, want 3", got)
	}
	if err := x.StartVerify(b.Ctx); err != nil {
		t.Fatalf("StartVerify of every partition: %v", err)
	}
}

// Attack on the job kinds: "indexentity.verify.<name>" does not name the table, while
// secondaryindex's kinds do. Two option-2 indexes named "LastName" on two tables (the
// employees' and the contractors') cannot be registered on one worker (the archiver's
// `run` with both in Extensions.Indexes fails), and on two workers sharing a queue each
// takes the other's jobs and runs them on its own table. Expected: distinct kinds.
func TestAttackSamePartitionKindsOmitTheTable(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	q := b.queue()
	other := must(repo.New[Employee](b.Clients.Tables, b.NewTableName(), &repo.Options{Retry: fast}))
	a := b.samePartition(&SamePartitionOptions{Queue: q})
	c := must(NewSamePartition(other, "LastName", lastName, &SamePartitionOptions{Queue: q}))
	if a.VerifyKind() == c.VerifyKind() || a.BackfillKind() == c.BackfillKind() {
		t.Fatalf("indexes on tables %s and %s share the kinds %q, %q", b.emps.Name(), other.Name(), a.VerifyKind(), a.BackfillKind())
	}
	reg := queueworker.NewRegistry()
	if err := a.Register(reg); err != nil {
		t.Fatal(err)
	}
	if err := c.Register(reg); err != nil {
		t.Fatalf("the second table's index cannot join the worker: %v", err)
	}
}
