package tablearchive

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/internal/testenv"
	"github.com/tablepatterns/tablepatterns/patterns/periodtable"
	"github.com/tablepatterns/tablepatterns/repo"

	"fmt"
)

// A period claim against a Timestamp exactly at the bound (claimed end + SealGrace +
// ClockSkew): "refused when an entity Timestamp is after" the bound, so exactly at it is
// accepted, and one tick less of grace refuses it with nothing deleted and no generation.
func TestPeriodClaimTimestampExactlyAtBound(t *testing.T) {
	t.Parallel()
	b := setup(t, "")
	prefix := "B" + strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' {
			return r
		}
		return 'X'
	}, testenv.QueueName(t)[:10])
	day, err := periodtable.Scheme{Prefix: prefix, Period: periodtable.Daily}.TableFor(time.Now().Add(-72 * time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	fillTable(t, b, day.Name, 5, "a")
	tb, _ := repo.New[codec.Entity](b.clients.Tables, day.Name, nil)
	t.Cleanup(func() { _ = tb.DeleteTable(t.Context()) })
	var latest time.Time
	for e, err := range tb.Query(b.ctx, repo.Query{}) {
		if err != nil {
			t.Fatal(err)
		}
		if e.Timestamp.After(latest) {
			latest = e.Timestamp
		}
	}
	skew := time.Minute
	grace := latest.Sub(day.End) - skew
	container := testenv.ContainerName(t)
	job := ArchiveTableJob{Table: day.Name, Container: container, PeriodPrefix: prefix, Period: "daily"}

	short, err := New(b.clients, &Options{Retry: fastRetry(), SealGrace: grace - time.Microsecond/10, ClockSkew: skew})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := short.ArchiveTable(b.ctx, job); !errors.Is(err, ErrNotSealed) {
		t.Fatalf("Timestamp %s one tick after the bound: %v, want ErrNotSealed", latest.Format(time.RFC3339Nano), err)
	}
	if ok, err := tb.Exists(b.ctx); !ok || err != nil {
		t.Fatalf("table deleted after a refused claim (%v)", err)
	}
	if gens, _ := short.Generations(b.ctx, container, day.Name); len(gens) != 0 {
		t.Fatalf("generations left by a refused claim: %v", gens)
	}
	exact, err := New(b.clients, &Options{Retry: fastRetry(), SealGrace: grace, ClockSkew: skew})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := exact.ArchiveTable(b.ctx, job)
	if err != nil || rep.Outcome != OutcomeMoved {
		t.Fatalf("Timestamp %s exactly at the bound: %+v %v, want moved", latest.Format(time.RFC3339Nano), rep.Outcome, err)
	}
}

// The job names the period scheme its table belongs to, and the worker believed it. Daily
// and Weekly stamps have the same form, so a weekly scheme's table parses as the one-day
// period of its Monday, which ended long before its week does: "-period daily" (an
// operator's slip, or any job on the queue within the table allowlist) got a live table
// exported and deleted as "sealed". The table holds writes made seconds ago, far after
// the claimed period's end + grace: that alone proves it is not sealed. Expected:
// ErrNotSealed, the table kept, and no generation written. (The week is the one of two
// days ago, so that its Monday ended more than a day ago whatever the day of the test.)
func TestWeeklyTableArchivedAsDaily(t *testing.T) {
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
	week, err := weekly.TableFor(time.Now().Add(-48 * time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	tb, err := repo.New[codec.Entity](b.clients.Tables, week.Name, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := tb.CreateIfNotExists(b.ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tb.DeleteTable(t.Context()) })
	for i := range 20 {
		if err := tb.Insert(b.ctx, &codec.Entity{PartitionKey: "u", RowKey: fmt.Sprint(i), Properties: map[string]any{"At": time.Now().UTC()}}); err != nil {
			t.Fatal(err)
		}
	}
	container := testenv.ContainerName(t)
	job := ArchiveTableJob{Table: week.Name, Container: container, PeriodPrefix: prefix, Period: "daily"}
	if err := a.CheckSealed(job); err != nil {
		t.Fatalf("the claimed day (the Monday of %s) ended more than a day ago: %v", week, err)
	}
	rep, err := a.ArchiveTable(b.ctx, job)
	if !errors.Is(err, ErrNotSealed) {
		t.Fatalf("live weekly table %s archived as a daily period: %+v %v; want ErrNotSealed", week.Name, rep.Outcome, err)
	}
	if ok, err := tb.Exists(b.ctx); !ok || err != nil {
		t.Fatalf("table deleted (%v)", err)
	}
	if gens, err := a.Generations(b.ctx, container, week.Name); len(gens) != 0 {
		t.Fatalf("generations written for a refused table: %v (%v)", gens, err)
	}
	if !permanent(err) {
		t.Fatal("a wrong period claim is retried")
	}
}

// The same wrong claim on the rerun path: an earlier export (operator-sealed, table
// kept) already holds the table exactly, so the job does not export again; its rescan
// must still check the claim against the Timestamps, and refuse.
func TestWrongPeriodClaimRefusedOnTheRerunPath(t *testing.T) {
	t.Parallel()
	b := setup(t, "")
	a, err := New(b.clients, &Options{Retry: fastRetry(), SealGrace: time.Minute, ClockSkew: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	prefix := "R" + strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' {
			return r
		}
		return 'X'
	}, testenv.QueueName(t)[:10])
	day, err := periodtable.Scheme{Prefix: prefix, Period: periodtable.Daily}.TableFor(time.Now().Add(-72 * time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	fillTable(t, b, day.Name, 10, "a") // written now, days after the day
	t.Cleanup(func() {
		if tb, err := repo.New[codec.Entity](b.clients.Tables, day.Name, nil); err == nil {
			_ = tb.DeleteTable(t.Context())
		}
	})
	container := testenv.ContainerName(t)
	first, err := a.ArchiveTable(b.ctx, ArchiveTableJob{Table: day.Name, Container: container, Sealed: true, KeepTable: true})
	if err != nil {
		t.Fatal(err)
	}
	_, err = a.ArchiveTable(b.ctx, ArchiveTableJob{Table: day.Name, Container: container, PeriodPrefix: prefix, Period: "daily"})
	if !errors.Is(err, ErrNotSealed) {
		t.Fatalf("period job on a table written after its day (rerun path): %v, want ErrNotSealed", err)
	}
	if gens, err := a.Generations(b.ctx, container, day.Name); err != nil || len(gens) != 1 || gens[0] != first.Manifest.Generation {
		t.Fatalf("generations %v (%v), want only the operator's", gens, err)
	}
	tb, _ := repo.New[codec.Entity](b.clients.Tables, day.Name, nil)
	if ok, err := tb.Exists(b.ctx); !ok || err != nil {
		t.Fatalf("table deleted (%v)", err)
	}
}
