package periodtable_test

import (
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
	"github.com/tablepatterns/tablepatterns/patterns/periodtable"
	"github.com/tablepatterns/tablepatterns/repo"
)

// The writer passes the retention check, the period is dropped while its insert is in
// flight (the clock moves past the retention meanwhile), the insert gets
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

// Writes to an expired period and drops of periods that are not expired are refused
// before any request, so a dropped name is never written again.
func TestRetentionGuardsSendNothing(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	now := day0.AddDate(0, 0, 40)
	st := tables(t, b, periodtable.Daily, &periodtable.Options{Retention: 10 * 24 * time.Hour, Clock: fixedClock(now)})
	keepAll := tables(t, b, periodtable.Daily, &periodtable.Options{Clock: fixedClock(now)})
	tb, _ := st.Scheme().TableFor(now.AddDate(0, 0, -5))
	mark := b.proxy.Count()
	errsOf := map[string]error{}
	errsOf["insert expired"] = st.Insert(b.ctx, signIn("u", now.AddDate(0, 0, -11), true))
	errsOf["upsert expired"] = st.Upsert(b.ctx, signIn("u", now.Add(-10*24*time.Hour-time.Hour), true), nil)
	_, errsOf["prepare expired"] = st.Prepare(b.ctx, now.AddDate(0, 0, -20))
	_, errsOf["drop before live cutoff"] = st.DropBefore(b.ctx, now.AddDate(0, 0, -9))
	errsOf["drop live table"] = st.Drop(b.ctx, tb)
	errsOf["drop foreign table"] = st.Drop(b.ctx, periodtable.Table{Name: "Employees"})
	_, errsOf["drop without retention"] = keepAll.DropBefore(b.ctx, day0)
	_, errsOf["expire without retention"] = keepAll.DropExpired(b.ctx)
	errsOf["nil entity"] = st.Insert(b.ctx, nil)
	errsOf["zero time"] = st.Insert(b.ctx, &SignIn{UserID: "u", Attempt: "a"})
	for name, err := range errsOf {
		var ie *repo.InvalidInputError
		if !errors.As(err, &ie) {
			t.Errorf("%s: %v, want an *InvalidInputError", name, err)
		}
	}
	if n := b.proxy.Count() - mark; n != 0 {
		t.Fatalf("%d requests sent for refused input", n)
	}
	// The last writable period is exactly the one that ends after the horizon.
	if err := st.Insert(b.ctx, signIn("u", now.Add(-10*24*time.Hour), true)); err != nil {
		t.Fatalf("write at the horizon: %v", err)
	}
	mark = b.proxy.Count()
	for name, c := range map[string]struct {
		prop string
		o    *periodtable.Options
	}{
		"no time property":   {"", nil},
		"unknown property":   {"Nope", nil},
		"negative retention": {"AttemptTime", &periodtable.Options{Retention: -time.Hour}},
		"bad concurrency":    {"AttemptTime", &periodtable.Options{Concurrency: -2}},
		"bad skew":           {"AttemptTime", &periodtable.Options{ClockSkew: -2}},
		"bad retry":          {"AttemptTime", &periodtable.Options{Table: repo.Options{Concurrency: -1}}},
		"encrypted, no key":  {"AttemptTime", nil},
	} {
		var err error
		if name == "encrypted, no key" {
			_, err = periodtable.New[Secret](b.clients.Tables, st.Scheme(), c.prop, c.o)
		} else {
			_, err = periodtable.New[SignIn](b.clients.Tables, st.Scheme(), c.prop, c.o)
		}
		if !errors.Is(err, repo.ErrInvalidInput) {
			t.Errorf("New with %s: %v", name, err)
		}
	}
	if n := b.proxy.Count() - mark; n != 0 {
		t.Fatalf("%d requests sent by New", n)
	}
	if _, err := periodtable.New[SignIn](nil, st.Scheme(), "AttemptTime", nil); !errors.Is(err, repo.ErrInvalidInput) {
		t.Errorf("New with a nil client: %v", err)
	}
}

// Real Azure keeps a deleted table's name unusable for 40 s and more (Azurite does not;
// the fault proxy emulates it). A write to a period whose table is being deleted fails at
// once with ErrTableBeingDeleted instead of waiting to re-create the name; a drop that
// meets a table being deleted counts it as dropped; a query skips it.
func TestTableBeingDeleted(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	// A window longer than any run: a write that waited for the name would wait until go
	// test -timeout, and a later step never sees the name come back under load.
	b.proxy.EmulateTableBeingDeleted(24 * time.Hour)
	now := day0.AddDate(0, 0, 5)
	st := tables(t, b, periodtable.Daily, &periodtable.Options{Retention: 2 * 24 * time.Hour, Clock: fixedClock(now), ClockSkew: -1})
	today := now.Add(time.Hour)
	if err := st.Insert(b.ctx, signIn("u", today, true)); err != nil {
		t.Fatal(err)
	}
	tb, _ := st.Scheme().TableFor(today)
	rt, _ := st.Table(tb)
	if err := rt.DeleteTable(b.ctx); err != nil { // someone purges today's table by hand
		t.Fatal(err)
	}
	// The name stays unusable for the rest of the test, so the write can only return by
	// giving up; that it sent exactly one create, answered TableBeingDeleted, is what
	// "at once" means: no retry, no wait for the name.
	isCreate := func(r faultproxy.RequestInfo) bool {
		return r.Method == http.MethodPost && strings.HasSuffix(r.Path, "/Tables")
	}
	mark := b.proxy.CountMatching(isCreate)
	err := st.Insert(b.ctx, signIn("u", today.Add(time.Minute), true))
	if !errors.Is(err, repo.ErrTableBeingDeleted) {
		t.Fatalf("write to a table being deleted: %v", err)
	}
	creates := b.proxy.CountMatching(isCreate) - mark
	if n := b.proxy.CountMatching(func(r faultproxy.RequestInfo) bool { return r.Fired == "TableBeingDeleted" }); n != 1 || creates != 1 {
		t.Fatalf("%d creates, %d answered TableBeingDeleted; want exactly 1 (no retry loop, no wait for the name)", creates, n)
	}
	if _, err := st.Prepare(b.ctx, today); !errors.Is(err, repo.ErrTableBeingDeleted) {
		t.Fatalf("Prepare of a table being deleted: %v", err)
	}
	// A query over the period sees it empty, not an error.
	for _, err := range st.Query(b.ctx, today.Add(-time.Hour), today.Add(time.Hour), repo.Query{}, nil) {
		if err != nil {
			t.Fatalf("query over a dropped period: %v", err)
		}
		t.Fatal("an entity from a dropped table")
	}

	// Retention: a table that the service reports as being deleted is dropped already.
	old := tables(t, b, periodtable.Daily, &periodtable.Options{Clock: fixedClock(day0)})
	for d := range 3 {
		if err := old.Insert(b.ctx, signIn("u", day0.AddDate(0, 0, d), true)); err != nil {
			t.Fatal(err)
		}
	}
	b.proxy.AddRule(faultproxy.Rule{Name: "being deleted", Match: faultproxy.IsDeleteTable, Times: 1, Action: faultproxy.Respond(409, "TableBeingDeleted")})
	b.proxy.AddRule(faultproxy.Rule{Name: "gone", Match: faultproxy.IsDeleteTable, Times: 1, Action: faultproxy.Respond(404, "ResourceNotFound")})
	dropped, err := st.DropExpired(b.ctx)
	if err != nil || len(dropped) != 3 {
		t.Fatalf("drop with a table being deleted: %v %v", dropped, err)
	}
	if b.proxy.Fired("being deleted") != 1 || b.proxy.Fired("gone") != 1 {
		t.Fatal("the emulated answers did not fire")
	}
}
