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
)

// A period claim against a Timestamp exactly at the bound (claimed end + SealGrace +
// ClockSkew): "refused when an entity Timestamp is after" the bound, so exactly at it is
// accepted, and one tick less of grace refuses it with nothing deleted and no generation.
func TestAttackPeriodClaimTimestampExactlyAtBound(t *testing.T) {
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
