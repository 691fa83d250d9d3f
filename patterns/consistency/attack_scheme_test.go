package consistency

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/internal/testenv"
	"github.com/tablepatterns/tablepatterns/patterns/periodtable"
	"github.com/tablepatterns/tablepatterns/repo"
)

// The job names the period scheme its table belongs to, and the worker believes it. Daily
// and Weekly stamps have the same form, so this week's table of a weekly scheme (a live
// table, written right now) parses as a one-day period that ended long before its week
// does: "-period daily" (an operator's slip, or any job on the queue within the table
// allowlist) gets a live table exported and deleted as "sealed". The writers keep writing
// (their periodtable says the week is writable) and re-create it. The table holds writes
// made seconds ago, far after the claimed period's end + grace: that alone proves it is
// not sealed. Expected: ErrNotSealed (or ErrTableChanged), the table kept.
func TestAttackWeeklyTableArchivedAsDaily(t *testing.T) {
	t.Parallel()
	b := setup(t, "")
	a, err := New(b.clients, &Options{Retry: fastRetry(), SealGrace: time.Minute, ClockSkew: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	prefix := "W" + strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' {
			return r
		}
		return 'X'
	}, testenv.QueueName(t)[:10])
	weekly := periodtable.Scheme{Prefix: prefix, Period: periodtable.Weekly}
	week, err := weekly.TableFor(time.Now())
	if err != nil {
		t.Fatal(err)
	}
	writers, err := periodtable.New[codec.Entity](b.clients.Tables, weekly, &periodtable.Options{TimeProperty: "At", SealAfter: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		if err := writers.Insert(b.ctx, &codec.Entity{PartitionKey: "u", RowKey: fmt.Sprint(i), Properties: map[string]any{"At": time.Now().UTC()}}); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		if tb, err := repo.New[codec.Entity](b.clients.Tables, week.Name, nil); err == nil {
			_ = tb.DeleteTable(t.Context())
		}
	})
	job := ArchiveTableJob{Table: week.Name, Container: testenv.ContainerName(t), PeriodPrefix: prefix, Period: "daily"}
	if err := a.CheckSealed(job); err != nil {
		t.Skipf("the claimed day has not ended a grace ago yet (run on a Monday night): %v", err)
	}
	rep, err := a.ArchiveTable(b.ctx, job)
	if errors.Is(err, ErrNotSealed) || errors.Is(err, ErrTableChanged) {
		return
	}
	// A writer of this week, one second later: accepted (the week is open).
	werr := writers.Insert(b.ctx, &codec.Entity{PartitionKey: "u", RowKey: "after", Properties: map[string]any{"At": time.Now().UTC()}})
	t.Fatalf("live weekly table %s archived as a daily period: %+v %v; a writer of this week right after: %v (re-created the table)", week.Name, rep.Outcome, err, werr)
}
