package denormalize

import (
	"testing"
)

// Links are stored data anyone with write access can forge: a link row
// in the source's partition whose target key no entity can have must not make UpdateSource
// (one transaction) or RefreshSource (the worker) fail; the real copy is refreshed.
func TestForgedLinkDoesNotBlockTheSource(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"in partition", "across partitions"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			b := setup(t, false, false)
			q := b.queue()
			r := b.relation(nil)
			if mode != "in partition" {
				r = b.across(q, nil)
			}
			jones := manager("Sales", "000152", "Jun", "Jones", "555-0001")
			b.insert(jones)
			if err := r.PutTarget(b.Ctx, dept("Sales", "dept!Sales", "Sales", jones)); err != nil {
				t.Fatal(err)
			}
			if mode != "in partition" {
				b.drain(q, r)
			}
			_, links, err := r.readLinks(b.Ctx, Key{"Sales", "000152"})
			if err != nil || len(links) != 1 {
				t.Fatalf("links %+v, %v", links, err)
			}
			forged := links[0]
			forged.RowKey += "x"
			forged.TargetRowKey, forged.ETag = "a/b?", ""
			if err := r.links.Upsert(b.Ctx, &forged, nil); err != nil {
				t.Fatal(err)
			}
			s, err := b.emps.Get(b.Ctx, "Sales", "000152")
			if err != nil {
				t.Fatal(err)
			}
			s.Phone = "555-0009"
			if err := r.UpdateSource(b.Ctx, &s); err != nil {
				t.Fatalf("UpdateSource with a forged link: %v", err)
			}
			if mode != "in partition" {
				if st := b.drain(q, r); st.Poisoned != 0 {
					t.Fatalf("worker stats %+v: the refresh failed", st)
				}
			}
			if d := b.checkCopy(r, Key{"Sales", "dept!Sales"}); d.ManagerPhone != "555-0009" {
				t.Fatalf("copy %+v not refreshed", d)
			}
		})
	}
}
