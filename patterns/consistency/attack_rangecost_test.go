package consistency

import (
	"fmt"
	"strings"
	"testing"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
	"github.com/tablepatterns/tablepatterns/internal/testenv"
)

// doc.go's cost: "per 100 entities one target read". The target read of a batch asks for
// every copy of the partition between the batch's first and last key, not for the
// batch's keys: a target partition that already holds earlier archives interleaved with
// the batch's keys (a monthly archive by a Where on a date: each run's keys fall between
// the earlier runs') is read whole, page by page. 100 entities spread over a target
// partition of 5,000 earlier copies: expected one target read, observed one per 1,000
// earlier copies (and growing with the archive).
func TestAttackRangeTargetReadScansEarlierArchives(t *testing.T) {
	t.Parallel()
	ps := testenv.Proxies(t)
	b := setup(t, ps.ConnectionString)
	var old []*codec.Entity
	for i := 0; i < 5000; i++ {
		old = append(old, &codec.Entity{PartitionKey: "Sales", RowKey: fmt.Sprintf("%06d", i), Properties: map[string]any{"Old": true}})
	}
	if err := directTable(t, b.archive.Name()).BulkWrite(b.ctx, old, nil); err != nil {
		t.Fatal(err)
	}
	var fresh []*codec.Entity
	for i := 0; i < 100; i++ {
		fresh = append(fresh, &codec.Entity{PartitionKey: "Sales", RowKey: fmt.Sprintf("%06d-s", i*50), Properties: map[string]any{"N": int32(i)}})
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
