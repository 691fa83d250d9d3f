package consistency

import (
	"context"
	"io"
	"net/http"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
	"github.com/tablepatterns/tablepatterns/internal/testenv"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/repo/filter"
)

// The response of a range delete transaction is lost after it committed (its retry meets
// 404: outcome unknown). The package promises that "once a transaction committed (or
// when its outcome is unknown), the After hooks of its entities run": a companion whose
// only step is After (Inter with SafetyDelay off) must be told about every entity the
// transaction deleted. The rerun of the batch finds them gone and calls no Sweeper, so
// if the lost response skips After, nothing ever removes their copies.
func TestRangeLostDeleteResponseRunsAfter(t *testing.T) {
	t.Parallel()
	ps := testenv.Proxies(t)
	b := setup(t, ps.ConnectionString)
	c := &afterOnly{}
	a, err := New(b.clients, &Options{Retry: fastRetry(), Companions: map[string][]Companion{b.current.Name(): {c}}})
	if err != nil {
		t.Fatal(err)
	}
	want := b.loadRange(t, []string{"Sales"}, 5)
	var n atomic.Int32
	match := func(r *http.Request) bool {
		if !faultproxy.IsBatch(r) {
			return false
		}
		body, _ := io.ReadAll(r.Body)
		return strings.Contains(string(body), "DELETE ") && n.Add(1) == 1
	}
	ps.Table.AddRule(faultproxy.Rule{Name: "lost", Match: match, Action: faultproxy.DropAfterForward()})
	rep, err := a.ArchiveRange(b.ctx, ArchiveRangeJob{Source: b.current.Name(), PartitionKey: "Sales", TargetTable: b.archive.Name()})
	if err != nil {
		t.Fatalf("range: %+v %v", rep, err)
	}
	if ps.Table.Fired("lost") != 1 {
		t.Fatalf("the rule fired %d times", ps.Table.Fired("lost"))
	}
	b.assertRangeArchived(t, want, nil)
	c.mu.Lock()
	defer c.mu.Unlock()
	got := append([]string(nil), c.afters...)
	sort.Strings(got)
	if len(got) != 5 {
		t.Fatalf("After ran for %v; want all 5 entities the committed (lost-response) transaction deleted", got)
	}
}

// The same for the single-entity move: its delete transaction (a companion with an
// action forces a transaction) or plain delete loses its response after it landed.
func TestEntityLostDeleteResponseRunsAfter(t *testing.T) {
	t.Parallel()
	ps := testenv.Proxies(t)
	b := setup(t, ps.ConnectionString)
	c := &afterOnly{}
	a, err := New(b.clients, &Options{Retry: fastRetry(), Companions: map[string][]Companion{b.current.Name(): {c}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.current.Insert(b.ctx, rangeEntity("Sales", 1, 1)); err != nil {
		t.Fatal(err)
	}
	var n atomic.Int32
	match := func(r *http.Request) bool {
		return r.Method == http.MethodDelete && n.Add(1) == 1
	}
	ps.Table.AddRule(faultproxy.Rule{Name: "lost", Match: match, Action: faultproxy.DropAfterForward()})
	out, err := a.ArchiveEntity(b.ctx, b.job("Sales", "000001"))
	if err != nil {
		t.Fatalf("move: %v %v", out, err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.afters)+len(c.gones) == 0 {
		t.Fatalf("out %v: neither After nor Gone ran after a delete that landed", out)
	}
}

// A range job selecting by the entities' Timestamp (the natural "archive what was not
// written for a year" job): Condition allows any property but PartitionKey and RowKey,
// Timestamp is a queryable property, and the query selects every entity. The re-check
// must not drop them all.
func TestRangeTimestampCondition(t *testing.T) {
	t.Parallel()
	b := setup(t, "")
	want := b.loadRange(t, []string{"Sales"}, 5)
	future := time.Now().Add(time.Hour).UTC().Format(time.RFC3339Nano)
	job := ArchiveRangeJob{Source: b.current.Name(), PartitionKey: "Sales", TargetTable: b.archive.Name(),
		Where: []filter.Condition{{Property: "Timestamp", Op: "lt", Type: "Edm.DateTime", Value: future}}}
	if err := job.Validate(); err != nil {
		t.Skipf("refused: %v", err)
	}
	rep, err := b.a.ArchiveRange(b.ctx, job)
	if err != nil {
		t.Fatal(err)
	}
	got, err := b.current.Collect(b.ctx, repo.Query{Filter: job.mustSel(t)})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Moved != 5 {
		t.Fatalf("report %+v; the query itself still selects %d entities in the source; want all 5 moved", rep, len(got))
	}
	b.assertRangeArchived(t, want, nil)
}

var _ = context.Background

func (j ArchiveRangeJob) mustSel(t *testing.T) filter.Expr {
	t.Helper()
	p, err := j.plan()
	if err != nil {
		t.Fatal(err)
	}
	return p.Filter()
}
