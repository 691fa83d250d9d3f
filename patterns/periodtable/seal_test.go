package periodtable_test

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
	"github.com/tablepatterns/tablepatterns/patterns/periodtable"
	"github.com/tablepatterns/tablepatterns/repo"
)

// Issue 11 defect 9: the writer passes the retention check, the period is dropped while
// its insert is in flight (the clock moves past the retention meanwhile), the insert gets
// TableNotFound: the writer checks the period again and does not re-create the table.
func TestWriteInFlightDoesNotRecreateDroppedPeriod(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	at := day0.Add(12 * time.Hour)
	retention := 10 * 24 * time.Hour
	before := at.Add(retention)                               // the period is still writable
	after := day0.AddDate(0, 0, 1).Add(retention + time.Hour) // it has expired
	var calls atomic.Int32
	clock := func() time.Time {
		if calls.Add(1) == 1 {
			return before // the check before the insert
		}
		return after // every later look at the clock: the insert was in flight meanwhile
	}
	st := tables(t, b, periodtable.Daily, &periodtable.Options{Retention: retention, Clock: clock})
	// The period's table does not exist: it was dropped while the insert was in flight.
	err := st.Insert(b.ctx, signIn("u", at, true))
	if !errors.Is(err, repo.ErrInvalidInput) {
		t.Fatalf("insert into a period that expired in flight: %v, want ErrInvalidInput", err)
	}
	if n := b.proxy.CountMatching(isCreateTable); n != 0 {
		t.Fatalf("%d create table requests: the dropped period was re-created", n)
	}
	left, err := st.List(b.ctx, nil)
	if err != nil || len(left) != 0 {
		t.Fatalf("tables after the refused write: %v %v", left, err)
	}
}

// Drop and DropBefore keep the ClockSkew margin DropExpired keeps: a period whose
// retention ended less than ClockSkew ago may still be written by a writer whose clock
// runs behind.
func TestDropKeepsClockSkewMargin(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	retention := 10 * 24 * time.Hour
	now := day0.AddDate(0, 0, 1).Add(retention + 2*time.Minute) // day0 expired 2 minutes ago
	st := tables(t, b, periodtable.Daily, &periodtable.Options{Retention: retention, Clock: fixedClock(now)})
	tb, _ := st.Scheme().TableFor(day0)
	mark := b.proxy.Count()
	if err := st.Drop(b.ctx, tb); !errors.Is(err, repo.ErrInvalidInput) {
		t.Fatalf("drop within the clock skew: %v, want ErrInvalidInput", err)
	}
	if _, err := st.DropBefore(b.ctx, tb.End); !errors.Is(err, repo.ErrInvalidInput) {
		t.Fatalf("drop before a cutoff within the clock skew: %v, want ErrInvalidInput", err)
	}
	if n := b.proxy.Count() - mark; n != 0 {
		t.Fatalf("%d requests sent for refused drops", n)
	}
	later := tables(t, b, periodtable.Daily, &periodtable.Options{Retention: retention, Clock: fixedClock(now.Add(periodtable.DefaultClockSkew))})
	if err := later.Drop(b.ctx, tb); err != nil {
		t.Fatalf("drop past the margin: %v", err)
	}
}

// SealAfter: writes to a period that ended SealAfter ago are refused before any request,
// so that an archiver can export and drop it with no writer left.
func TestSealAfterRefusesWrites(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	now := day0.AddDate(0, 0, 3)
	st := tables(t, b, periodtable.Daily, &periodtable.Options{SealAfter: time.Hour, Clock: fixedClock(now)})
	mark := b.proxy.Count()
	if err := st.Insert(b.ctx, signIn("u", day0, true)); !errors.Is(err, repo.ErrInvalidInput) {
		t.Fatalf("write to a sealed period: %v", err)
	}
	if _, err := st.Prepare(b.ctx, now.Add(-time.Hour-24*time.Hour)); !errors.Is(err, repo.ErrInvalidInput) {
		t.Fatalf("prepare of a sealed period: %v", err)
	}
	if n := b.proxy.Count() - mark; n != 0 {
		t.Fatalf("%d requests sent for sealed periods", n)
	}
	if err := st.Insert(b.ctx, signIn("u", now.Add(-30*time.Minute), true)); err != nil {
		t.Fatalf("write to the current period: %v", err)
	}
	if _, err := periodtable.New[SignIn](b.clients.Tables, st.Scheme(), "AttemptTime", &periodtable.Options{SealAfter: -2}); !errors.Is(err, repo.ErrInvalidInput) {
		t.Fatalf("SealAfter -2: %v", err)
	}
	for _, s := range []string{"hourly", "daily", "weekly", "monthly", "every 15m0s"} {
		p, err := periodtable.ParsePeriod(s)
		if err != nil || p.String() != s {
			t.Fatalf("ParsePeriod(%q) = %v, %v", s, p, err)
		}
	}
	if _, err := periodtable.ParsePeriod("fortnightly"); !errors.Is(err, repo.ErrInvalidInput) {
		t.Fatalf("ParsePeriod(fortnightly): %v", err)
	}
}

func isCreateTable(r faultproxy.RequestInfo) bool {
	return r.Method == "POST" && (r.Path == "/Tables" || len(r.Path) >= 7 && r.Path[len(r.Path)-7:] == "/Tables")
}
