package consistency

import (
	"fmt"
	"strings"
	"testing"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
	"github.com/tablepatterns/tablepatterns/internal/testenv"
)

// The target read of a batch takes one page of the batch's key range and point-reads the
// keys past it. Against short pages (7 rows) and an empty first page with a continuation
// (as Azure may answer at its 5 s limit), every key must still be found: the target holds
// stale copies of all of them, so a key taken for absent would be inserted over its copy
// (409 on every attempt) instead of replaced, and the batch would never move.
func TestRangeTargetReadAcrossShortAndEmptyPages(t *testing.T) {
	t.Parallel()
	for _, emptyFirst := range []bool{false, true} {
		t.Run(fmt.Sprintf("emptyFirst=%v", emptyFirst), func(t *testing.T) {
			t.Parallel()
			ps := testenv.Proxies(t)
			b := setup(t, ps.ConnectionString)
			b.loadRange(t, []string{"Sales"}, 120)
			job := ArchiveRangeJob{Source: b.current.Name(), PartitionKey: "Sales", TargetTable: b.archive.Name()}
			if rep, err := b.a.ArchiveRange(b.ctx, job); err != nil || rep.Moved != 120 {
				t.Fatalf("first archive: %+v %v", rep, err)
			}
			want := map[RangeKey]string{}
			var fresh []*codec.Entity // the same keys again: every copy is stale now
			for i := range 120 {
				fresh = append(fresh, rangeEntity("Sales", i, 2))
			}
			if err := directTable(t, b.current.Name()).BulkWrite(b.ctx, fresh, nil); err != nil {
				t.Fatal(err)
			}
			for _, e := range fresh {
				want[RangeKey{e.PartitionKey, e.RowKey}] = e.ETag
			}
			ps.Table.EmulatePaging(7, emptyFirst)
			ps.Table.Reset()
			rep, err := b.a.ArchiveRange(b.ctx, job)
			if err != nil || rep.Moved != 120 {
				t.Fatalf("second archive: %+v: %v", rep, err)
			}
			if reads := ps.Table.CountMatching(func(r faultproxy.RequestInfo) bool {
				return r.Method == "GET" && r.Path == "/devstoreaccount1/"+b.archive.Name()+"()"
			}); reads != 2 {
				t.Fatalf("%d target queries for two batches, want one page each", reads)
			}
			ps.Table.EmulatePaging(0, false)
			b.assertRangeArchived(t, want, nil)
			got, err := b.archive.Get(b.ctx, "Sales", fmt.Sprintf("%06d", 100))
			if err != nil || got.Properties["Version"] != int32(2) {
				t.Fatalf("copy: %v %v", got.Properties, err)
			}
		})
	}
}

// A target copy read back without an ETag is refused by the single move and the range
// move alike: its replace would be unconditional (If-Match: *) and could overwrite a
// newer copy written since the read. The service always sends one, so this is a response
// that was tampered with or broken on the way.
func TestCopyWithoutETagRefused(t *testing.T) {
	t.Parallel()
	e := &codec.Entity{PartitionKey: "p", RowKey: "r", Properties: map[string]any{SourceETagProperty: "W/\"1\""}}
	if _, err := tableCopyState("Archive", e); err == nil || !strings.Contains(err.Error(), "without an ETag") {
		t.Fatalf("a copy without an ETag: %v, want a refusal", err)
	}
	e.ETag = "W/\"2\""
	st, err := tableCopyState("Archive", e)
	if err != nil || !st.exists || st.etag != e.ETag || st.sourceETag != "W/\"1\"" {
		t.Fatalf("a copy with an ETag: %+v %v", st, err)
	}
}

// doc.go's cost: "per 100 entities one target read". The target read of a batch asks for
// every copy of the partition between the batch's first and last key, not for the
// batch's keys: a target partition that already holds earlier archives interleaved with
// the batch's keys (a monthly archive by a Where on a date: each run's keys fall between
// the earlier runs') is read whole, page by page. 100 entities spread over a target
// partition of 2,000 earlier copies: expected one target read, observed one per 1,000
// earlier copies (and growing with the archive).
func TestRangeTargetReadScansEarlierArchives(t *testing.T) {
	t.Parallel()
	ps := testenv.Proxies(t)
	b := setup(t, ps.ConnectionString)
	var old []*codec.Entity
	for i := 0; i < 2000; i++ {
		old = append(old, &codec.Entity{PartitionKey: "Sales", RowKey: fmt.Sprintf("%06d", i), Properties: map[string]any{"Old": true}})
	}
	if err := directTable(t, b.archive.Name()).BulkWrite(b.ctx, old, nil); err != nil {
		t.Fatal(err)
	}
	var fresh []*codec.Entity
	for i := 0; i < 100; i++ {
		fresh = append(fresh, &codec.Entity{PartitionKey: "Sales", RowKey: fmt.Sprintf("%06d-s", i*20), Properties: map[string]any{"N": int32(i)}})
	}
	if err := directTable(t, b.current.Name()).BulkWrite(b.ctx, fresh, nil); err != nil {
		t.Fatal(err)
	}
	ps.Table.Reset()
	job := ArchiveRangeJob{Source: b.current.Name(), PartitionKey: "Sales", TargetTable: b.archive.Name()}
	rep, err := b.a.ArchiveRange(b.ctx, job)
	if err != nil || rep.Moved != 100 {
		t.Fatalf("%+v: %v", rep, err)
	}
	reads := ps.Table.CountMatching(func(r faultproxy.RequestInfo) bool {
		return r.Method == "GET" && strings.Contains(r.Path, "/"+b.archive.Name()+"()")
	})
	if reads != 1 {
		t.Fatalf("%d target reads for one batch of 100, want 1", reads)
	}
}
