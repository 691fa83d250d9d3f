package periodtable_test

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
	"github.com/tablepatterns/tablepatterns/patterns/periodtable"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/repo/filter"
	"github.com/tablepatterns/tablepatterns/retry"
)

var day0 = time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC)

// Writes land in the table of their own day; the tables are created on first use, and
// List returns them in period order.
func TestWritesAreRoutedByTime(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	st := tables(t, b, periodtable.Daily, nil)
	var written []*SignIn
	for d := range 3 {
		for h := range 4 {
			s := signIn(fmt.Sprintf("user%d", h%2), day0.Add(time.Duration(d)*24*time.Hour+time.Duration(h)*5*time.Hour+time.Minute), h%3 != 0)
			if err := st.Insert(b.ctx, s); err != nil {
				t.Fatal(err)
			}
			written = append(written, s)
		}
	}
	list, err := st.List(b.ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tb := range list {
		names = append(names, strings.TrimPrefix(tb.Name, b.prefix))
	}
	if !slices.Equal(names, []string{"20240501", "20240502", "20240503"}) {
		t.Fatalf("tables %v", names)
	}
	for _, s := range written {
		tb, err := st.Scheme().TableFor(s.AttemptTime)
		if err != nil {
			t.Fatal(err)
		}
		rt, err := st.Table(tb)
		if err != nil {
			t.Fatal(err)
		}
		got, err := rt.Get(b.ctx, s.UserID, s.Attempt)
		if err != nil || !got.AttemptTime.Equal(s.AttemptTime) {
			t.Fatalf("%v not in %s: %v", s.AttemptTime, tb.Name, err)
		}
		if got, err := st.Get(b.ctx, s.AttemptTime, s.UserID, s.Attempt); err != nil || got.Success != s.Success {
			t.Fatalf("Get: %+v %v", got, err)
		}
	}
	// A day that was never written has no table: Get says not found.
	if _, err := st.Get(b.ctx, day0.AddDate(0, 0, 9), "user0", "x"); !errors.Is(err, repo.ErrNotFound) {
		t.Fatalf("Get in a period without a table: %v", err)
	}
	// List with a range keeps the overlapping periods only.
	mid, err := st.List(b.ctx, &periodtable.ListOptions{From: day0.Add(36 * time.Hour), To: day0.Add(48 * time.Hour)})
	if err != nil || len(mid) != 1 || !mid[0].Start.Equal(day0.AddDate(0, 0, 1)) {
		t.Fatalf("List of a half day: %v %v", mid, err)
	}
}

// Many writers starting a new period at once all succeed: creating the table is idempotent.
func TestConcurrentFirstWritesOfAPeriod(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	st := tables(t, b, periodtable.Hourly, nil)
	const n = 24
	var wg sync.WaitGroup
	errc := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errc <- st.Insert(b.ctx, signIn(fmt.Sprintf("u%02d", i), day0.Add(time.Duration(i%3)*time.Hour+time.Duration(i)*time.Second), true))
		}()
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		if err != nil {
			t.Fatal(err)
		}
	}
	got := 0
	for _, err := range st.Query(b.ctx, time.Time{}, time.Time{}, repo.Query{}, nil) {
		if err != nil {
			t.Fatal(err)
		}
		got++
	}
	if got != n {
		t.Fatalf("%d stored, want %d", got, n)
	}
}

// A range query reads exactly the entities of [from, to), period by period in order,
// with at most Concurrency tables read at once.
func TestQueryFansOutAndMergesInOrder(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	st := tables(t, b, periodtable.Daily, &periodtable.Options{Concurrency: 2})
	var all []*SignIn
	for d := range 6 {
		for h := 0; h < 24; h += 6 {
			for _, u := range []string{"bob", "alice"} {
				s := signIn(u, day0.Add(time.Duration(d*24+h)*time.Hour), h == 0)
				if err := st.Insert(b.ctx, s); err != nil {
					t.Fatal(err)
				}
				all = append(all, s)
			}
		}
	}
	from, to := day0.Add(36*time.Hour), day0.Add(4*24*time.Hour+7*time.Hour) // mid day 1 .. day 4 06:59
	// Expected: by day, then as each table orders them (PartitionKey, RowKey).
	var want []string
	for d := 1; d <= 4; d++ {
		for _, u := range []string{"alice", "bob"} {
			for _, s := range all {
				if s.UserID == u && s.AttemptTime.Day() == 1+d && !s.AttemptTime.Before(from) && s.AttemptTime.Before(to) {
					want = append(want, u+"@"+s.Attempt)
				}
			}
		}
	}

	read := func(q repo.Query, o *periodtable.QueryOptions) []string {
		var got []string
		for s, err := range st.Query(b.ctx, from, to, q, o) {
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, s.UserID+"@"+s.Attempt)
		}
		return got
	}
	// Hold the first two table reads at the proxy: the fan-out must have both in flight at
	// once (a barrier, not a sleep), and with Concurrency 2 it may not start a third while
	// they are held.
	first := b.proxy.PauseAt("first read", faultproxy.IsListEntities, 1)
	second := b.proxy.PauseAt("second read", faultproxy.IsListEntities, 1) // the first is held before it
	t.Cleanup(first.Release)
	t.Cleanup(second.Release)
	type result struct {
		got []string
		err error
	}
	done := make(chan result, 1)
	go func() {
		var r result
		for s, err := range st.Query(b.ctx, from, to, repo.Query{}, nil) {
			if err != nil {
				r.err = err
				break
			}
			r.got = append(r.got, s.UserID+"@"+s.Attempt)
		}
		done <- r
	}()
	ctx := b.ctx // a read that never starts hangs until go test -timeout
	if err := first.Wait(ctx); err != nil {
		t.Fatalf("no table read started: %v", err)
	}
	if err := second.Wait(ctx); err != nil {
		t.Fatalf("the second table read did not start while the first was in flight: %v", err)
	}
	// A third read would have been started in the same burst as the second: one more round
	// trip through the proxy gives it ample time to show up (an event to wait for, not a
	// sleep).
	if _, err := b.clients.Tables.GetProperties(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if n := first.Seen(); n != 2 {
		t.Fatalf("%d table reads started while two were in flight, want Concurrency = 2", n)
	}
	first.Release()
	second.Release()
	if r := <-done; r.err != nil || !slices.Equal(r.got, want) {
		t.Fatalf("Query: %v\n got %v\nwant %v", r.err, r.got, want)
	}
	// Descending: the newest period first, each period still in key order.
	var wantDesc []string
	for d := 4; d >= 1; d-- {
		for _, k := range want {
			if strings.Contains(k, fmt.Sprintf("@202405%02d", 1+d)) {
				wantDesc = append(wantDesc, k)
			}
		}
	}
	if got := read(repo.Query{}, &periodtable.QueryOptions{Descending: true}); !slices.Equal(got, wantDesc) {
		t.Fatalf("Descending\n got %v\nwant %v", got, wantDesc)
	}
	// The caller's filter applies in every table; Top bounds the total.
	failed := read(repo.Query{Filter: filter.Eq("Success", false)}, nil)
	for _, k := range failed {
		if strings.Contains(k, "T000000") {
			t.Fatalf("a successful attempt passed the filter: %s", k)
		}
	}
	if len(failed) == 0 {
		t.Fatal("no failed attempts found")
	}
	if got := read(repo.Query{Top: 3}, nil); !slices.Equal(got, want[:3]) {
		t.Fatalf("Top 3: %v", got)
	}
	// Stopping early cancels the reads in flight and returns.
	for range st.Query(b.ctx, from, to, repo.Query{}, nil) {
		break
	}
}

// A token cannot resume a fan-out; an inverted range or a bad filter is refused. Nothing
// is sent.
func TestQueryRefusesBadInputWithoutRequest(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	st := tables(t, b, periodtable.Daily, nil)
	mark := b.proxy.Count()
	cases := map[string]struct {
		from, to time.Time
		q        repo.Query
	}{
		"token":    {q: repo.Query{Token: "abc"}},
		"inverted": {from: day0.Add(time.Hour), to: day0},
		"filter":   {q: repo.Query{Filter: filter.Eq("bad name", 1)}},
		"top":      {q: repo.Query{Top: -1}},
	}
	for name, c := range cases {
		var err error
		for _, e := range st.Query(b.ctx, c.from, c.to, c.q, nil) {
			err = e
		}
		if !errors.Is(err, repo.ErrInvalidInput) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if n := b.proxy.Count() - mark; n != 0 {
		t.Fatalf("%d requests sent", n)
	}
}

// Retention across many period tables: 40 days of tables, a retention of 10 days. The
// expired tables are dropped with exactly one DELETE each, nothing else is deleted, and
// the tables of the other periods — and other tables sharing the prefix — remain. A run
// that failed half way is completed by running it again.
func TestRetentionDropsExpiredTablesOneDeleteEach(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	now := day0.AddDate(0, 0, 40).Add(12 * time.Hour) // 2024-06-10T12:00Z
	st := tables(t, b, periodtable.Daily, &periodtable.Options{Retention: 10 * 24 * time.Hour, Clock: fixedClock(now), ClockSkew: -1})
	old := tables(t, b, periodtable.Daily, &periodtable.Options{Clock: fixedClock(day0)}) // writes without a horizon
	const days = 40
	for d := range days {
		at := day0.AddDate(0, 0, d).Add(time.Hour)
		if err := old.Insert(b.ctx, signIn("u", at, true)); err != nil {
			t.Fatal(err)
		}
		if err := old.Insert(b.ctx, signIn("v", at, false)); err != nil {
			t.Fatal(err)
		}
	}
	// Tables that share the prefix but are not the scheme's: never listed, never dropped.
	hourly := tables(t, b, periodtable.Hourly, &periodtable.Options{Clock: fixedClock(day0)})
	if _, err := hourly.Prepare(b.ctx, day0); err != nil {
		t.Fatal(err)
	}
	// Expired: periods ending at or before now - 10 days = 2024-05-31T12:00Z, i.e. the days
	// 2024-05-01 .. 2024-05-30: 30 tables.
	const expired = 30

	// First run: the drops of three tables fail with a non-retryable error; the others go.
	b.proxy.Reset()
	b.proxy.AddRule(faultproxy.Rule{Name: "denied", Match: faultproxy.IsDeleteTable, Times: 3, Action: faultproxy.Respond(403, "AuthorizationFailure")})
	dropped, err := st.DropExpired(b.ctx)
	if err == nil || len(dropped) != expired-3 {
		t.Fatalf("first run: %d dropped, error %v; want %d and an error", len(dropped), err, expired-3)
	}
	// Second run finishes the job with one DELETE per remaining table.
	b.proxy.ClearRules()
	b.proxy.Reset()
	dropped, err = st.DropExpired(b.ctx)
	if err != nil || len(dropped) != 3 {
		t.Fatalf("second run: %d dropped, %v", len(dropped), err)
	}
	deletes, entityWrites := 0, 0
	for _, r := range b.proxy.Requests() {
		switch {
		case r.Method == "DELETE" && strings.HasPrefix(r.Path, "/devstoreaccount1/Tables("):
			deletes++
		case r.Method != "GET":
			entityWrites++
		}
	}
	if deletes != 3 || entityWrites != 0 {
		t.Fatalf("second run sent %d table deletes and %d other writes", deletes, entityWrites)
	}
	left, err := st.List(b.ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(left) != days-expired || !left[0].Start.Equal(day0.AddDate(0, 0, expired)) {
		t.Fatalf("%d tables left, first %v", len(left), left)
	}
	if h, err := hourly.List(b.ctx, nil); err != nil || len(h) != 1 {
		t.Fatalf("the hourly table sharing the prefix: %v %v", h, err)
	}
	// A third run has nothing to do and deletes nothing.
	b.proxy.Reset()
	if dropped, err := st.DropExpired(b.ctx); err != nil || len(dropped) != 0 {
		t.Fatalf("third run: %v %v", dropped, err)
	}
	if n := b.proxy.CountMatching(func(r faultproxy.RequestInfo) bool { return r.Method == "DELETE" }); n != 0 {
		t.Fatalf("third run sent %d deletes", n)
	}
}

// Secret has an encrypted field: its tables need repo.Options.Encryption.
type Secret struct {
	UserID      string    `table:",pk"`
	Attempt     string    `table:",rk"`
	AttemptTime time.Time `table:"AttemptTime"`
	Note        string    `table:"Note,encrypt"`
}

// Transient faults — busy server, lost responses — on writes, creates and drops leave each
// sign-in stored once and each table dropped. The writer's tables track writes, so an
// insert whose response was lost knows it landed (without, it says repo.ErrOutcomeUnknown).
func TestFaultsOnWritesAndDrops(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	now := day0.AddDate(0, 0, 10)
	st := tables(t, b, periodtable.Daily, &periodtable.Options{Retention: 3 * 24 * time.Hour, Clock: fixedClock(now), ClockSkew: -1})
	writer := tables(t, b, periodtable.Daily, &periodtable.Options{Clock: fixedClock(day0), Table: repo.Options{TrackWrites: true}})
	b.proxy.SetSeed(3)
	b.proxy.AddRule(faultproxy.Rule{Name: "busy", Probability: 0.15, Action: faultproxy.Respond(503, "ServerBusy")})
	b.proxy.AddRule(faultproxy.Rule{Name: "lost", Match: faultproxy.Not(faultproxy.MethodIs("GET")), Probability: 0.15, Action: faultproxy.DropAfterForward()})
	const n = 60
	for i := range n {
		if err := writer.Insert(b.ctx, signIn(fmt.Sprintf("u%d", i%4), day0.Add(time.Duration(i)*3*time.Hour), i%2 == 0)); err != nil {
			t.Fatalf("insert %d: %v", i, err)
		}
	}
	got := 0
	for _, err := range st.Query(b.ctx, time.Time{}, time.Time{}, repo.Query{}, nil) {
		if err != nil {
			t.Fatal(err)
		}
		got++
	}
	if got != n {
		t.Fatalf("%d stored, want %d", got, n)
	}
	dropped, err := st.DropExpired(b.ctx)
	if err != nil {
		t.Fatal(err)
	}
	fired := b.proxy.Fired("busy") + b.proxy.Fired("lost")
	b.proxy.ClearRules()
	left, err := st.List(b.ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(dropped)+len(left) != 8 || len(left) != 1 { // 60 x 3 h = 7.5 days: 8 tables; only 2024-05-08 is not expired
		t.Fatalf("dropped %d, left %v", len(dropped), left)
	}
	if fired < 10 {
		t.Fatalf("only %d faults fired: the test did not exercise retries", fired)
	}
}

// The first write of a period is three steps (insert: no table; create; insert). A process
// that stops after any of them leaves a state the rerun completes: the entity stored once.
func TestFirstWriteStoppedBetweenStepsThenRerun(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		rule faultproxy.Rule
	}{
		{"stop before the create", faultproxy.Rule{Match: faultproxy.IsCreateTable, Times: 1, Action: faultproxy.DropBeforeForward()}},
		{"stop after the create", faultproxy.Rule{Match: faultproxy.IsCreateTable, Times: 1, Action: faultproxy.DropAfterForward()}},
		{"stop after the second insert", faultproxy.Rule{Action: faultproxy.DropAfterForward()}}, // Match set below
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, true)
			crashing := tables(t, b, periodtable.Daily, &periodtable.Options{Table: repo.Options{Retry: retry.NoRetry()}})
			st := tables(t, b, periodtable.Daily, nil)
			s := signIn("u", day0.Add(time.Hour), false)
			c.rule.Name = "stop"
			if c.name == "stop after the second insert" {
				// The first insert (no table yet) must pass; the one after the create is lost.
				var n atomic.Int32
				c.rule.Match = func(r *http.Request) bool { return faultproxy.IsInsertEntity(r) && n.Add(1) == 2 }
				c.rule.Times = 1
			}
			b.proxy.AddRule(c.rule)
			if err := crashing.Insert(b.ctx, s); err == nil {
				t.Fatal("the stopped write reported success")
			}
			if b.proxy.Fired("stop") != 1 {
				t.Fatal("the stop did not happen")
			}
			// The rerun: Upsert is idempotent (a rerun of Insert would report ErrAlreadyExists
			// when the stopped run had stored the entity).
			if err := st.Upsert(b.ctx, s, nil); err != nil {
				t.Fatal(err)
			}
			n := 0
			for got, err := range st.Query(b.ctx, time.Time{}, time.Time{}, repo.Query{}, nil) {
				if err != nil {
					t.Fatal(err)
				}
				if got.Attempt != s.Attempt {
					t.Fatalf("unexpected entity %+v", got)
				}
				n++
			}
			if n != 1 {
				t.Fatalf("%d entities stored, want 1", n)
			}
		})
	}
}

// An archiver's view: the same tables as dynamic entities, read whole and dropped once
// archived.
func TestDynamicEntitiesForArchivers(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	now := day0.AddDate(0, 0, 30)
	writer := tables(t, b, periodtable.Daily, &periodtable.Options{Clock: fixedClock(day0)})
	for d := range 3 {
		if err := writer.Insert(b.ctx, signIn("u", day0.AddDate(0, 0, d), d%2 == 0)); err != nil {
			t.Fatal(err)
		}
	}
	archive, err := periodtable.New[codec.Entity](b.clients.Tables, writer.Scheme(), "AttemptTime", &periodtable.Options{
		Retention: 20 * 24 * time.Hour, Clock: fixedClock(now),
	})
	if err != nil {
		t.Fatal(err)
	}
	old, err := archive.List(b.ctx, &periodtable.ListOptions{EndBefore: day0.AddDate(0, 0, 2)})
	if err != nil || len(old) != 2 {
		t.Fatalf("tables ended by 05-03: %v %v", old, err)
	}
	for _, pt := range old {
		rt, err := archive.Table(pt)
		if err != nil {
			t.Fatal(err)
		}
		all, err := rt.Collect(b.ctx, repo.Query{})
		if err != nil || len(all) != 1 {
			t.Fatalf("%s: %d entities, %v", pt.Name, len(all), err)
		}
		if at, _ := all[0].Properties["AttemptTime"].(time.Time); !at.Equal(pt.Start) {
			t.Fatalf("%s holds an entity of %v", pt.Name, at)
		}
		if err := archive.Drop(b.ctx, pt); err != nil {
			t.Fatal(err)
		}
	}
	left, err := archive.List(b.ctx, nil)
	if err != nil || len(left) != 1 {
		t.Fatalf("left %v %v", left, err)
	}
	// Dynamic entities route by the named property too.
	e := &codec.Entity{PartitionKey: "u", RowKey: "dyn", Properties: map[string]any{"AttemptTime": now.Add(-time.Hour)}}
	if err := archive.Insert(b.ctx, e); err != nil {
		t.Fatal(err)
	}
	if _, err := archive.Get(b.ctx, now.Add(-time.Hour), "u", "dyn"); err != nil {
		t.Fatal(err)
	}
	if err := archive.Insert(b.ctx, &codec.Entity{PartitionKey: "u", RowKey: "x"}); !errors.Is(err, repo.ErrInvalidInput) {
		t.Fatalf("a dynamic entity without the time property: %v", err)
	}
}
