package logtail_test

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tablepatterns/tablepatterns/codec/keys"
	"github.com/tablepatterns/tablepatterns/patterns/logtail"
	"github.com/tablepatterns/tablepatterns/repo"
)

// The key is the guide's C# expression, digit for digit: DateTime(2024,1,1).Ticks is
// 638396640000000000 and DateTime.MaxValue.Ticks is 3155378975999999999.
func TestRowKeyIsDotNetInvertedTicks(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	for _, prefix := range []string{"", "claim_"} {
		log, err := logtail.New(claims(t, b), &logtail.Options{Prefix: prefix})
		if err != nil {
			t.Fatal(err)
		}
		at := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
		rk := log.RowKey(at, "C42")
		if want := prefix + "2516982335999999999_C42"; rk != want {
			t.Fatalf("RowKey = %q, want %q", rk, want)
		}
		got, id, err := log.ParseRowKey(rk)
		if err != nil || !got.Equal(at) || id != "C42" {
			t.Fatalf("ParseRowKey(%q) = %v %q %v", rk, got, id, err)
		}
		// 100 ns resolution, sub-tick part truncated like .NET.
		fine := time.Date(2031, 7, 9, 13, 4, 5, 123456789, time.UTC)
		got, _, err = log.ParseRowKey(log.RowKey(fine, "x"))
		if err != nil || !got.Equal(fine.Truncate(100*time.Nanosecond)) {
			t.Fatalf("round trip of %v: %v %v", fine, got, err)
		}
		if _, _, err := log.ParseRowKey("EMPLOYEE"); !errors.Is(err, repo.ErrInvalidInput) {
			t.Fatalf("ParseRowKey of a foreign key: %v", err)
		}
	}
}

// Newest n is one request with $top=n whatever the length of the log, returns the entries
// newest first, and ignores the other entities of the partition.
func TestNewestIsOneRequestWithTop(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	tb := claims(t, b)
	start := time.Date(2024, 5, 1, 9, 0, 0, 0, time.UTC)
	log, err := logtail.New(tb, &logtail.Options{Clock: steppingClock(start, time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	// An entity of another kind in the same partition, before and after the log's keys.
	for _, rk := range []string{"!profile", "EMPLOYEE"} {
		if err := tb.Insert(b.Ctx, &Claim{Employee: "000123", Key: rk, Description: "not a claim"}); err != nil {
			t.Fatal(err)
		}
	}
	const n = 30
	for i := range n {
		c := &Claim{Employee: "000123", ClaimID: fmt.Sprintf("C%03d", i), Amount: float64(i)}
		at, err := log.Append(b.Ctx, c)
		if err != nil {
			t.Fatal(err)
		}
		if want := start.Add(time.Duration(i) * time.Minute); !at.Equal(want) {
			t.Fatalf("append %d stamped %v, want %v", i, at, want)
		}
		if got, err := log.TimeOf(c); err != nil || !got.Equal(at) {
			t.Fatalf("TimeOf = %v %v, want %v", got, err, at)
		}
	}
	mark := b.Proxy().Count()
	newest, err := log.Newest(b.Ctx, "000123", 10)
	if err != nil {
		t.Fatal(err)
	}
	reqs := b.Proxy().Requests()[mark:]
	if len(reqs) != 1 {
		t.Fatalf("Newest sent %d requests, want 1", len(reqs))
	}
	q, _ := url.ParseQuery(reqs[0].RawQuery)
	if q.Get("$top") != "10" {
		t.Fatalf("Newest did not ask for $top=10: %s", reqs[0].RawQuery)
	}
	if len(newest) != 10 {
		t.Fatalf("%d entries", len(newest))
	}
	for i, c := range newest {
		if want := fmt.Sprintf("C%03d", n-1-i); c.ClaimID != want {
			t.Fatalf("entry %d is %s, want %s", i, c.ClaimID, want)
		}
	}
	all, err := log.Newest(b.Ctx, "000123", 1000)
	if err != nil || len(all) != n {
		t.Fatalf("whole log: %d entries, %v", len(all), err)
	}
}

// Entries stamped in the same tick — a clock that never moves, several writers, many
// goroutines — do not collide, and each Log keeps the order of its Appends.
func TestSameTickDoesNotCollide(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	tb := claims(t, b)
	frozen := func() time.Time { return time.Date(2024, 5, 1, 9, 0, 0, 0, time.UTC) }
	const writers, perWriter = 3, 20
	var wg sync.WaitGroup
	errc := make(chan error, writers*perWriter)
	for w := range writers {
		log, err := logtail.New(tb, &logtail.Options{Clock: frozen, WriterID: fmt.Sprintf("w%d", w)})
		if err != nil {
			t.Fatal(err)
		}
		for i := range perWriter {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, err := log.Append(b.Ctx, &Claim{Employee: "000123", ClaimID: fmt.Sprintf("w%d-%02d", w, i)})
				errc <- err
			}()
		}
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		if err != nil {
			t.Fatal(err)
		}
	}
	log, _ := logtail.New(tb, nil)
	all, err := log.Newest(b.Ctx, "000123", 1000)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != writers*perWriter {
		t.Fatalf("%d entries stored, want %d", len(all), writers*perWriter)
	}
	last := map[string]time.Time{}
	for _, c := range all {
		at, id, err := log.ParseRowKey(c.Key)
		if err != nil {
			t.Fatal(err)
		}
		// Newest first: each writer's times strictly decrease down the list.
		if prev, ok := last[id]; ok && !at.Before(prev) {
			t.Fatalf("writer %s: %v listed after %v", id, at, prev)
		}
		last[id] = at
	}
	if len(last) != writers {
		t.Fatalf("entries of %d writers, want %d", len(last), writers)
	}
}

// Two Logs given the same WriterID still do not overwrite each other: the second moves on
// to the next tick.
func TestSharedWriterIDMovesToNextTick(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	tb := claims(t, b)
	frozen := func() time.Time { return time.Date(2024, 5, 1, 9, 0, 0, 0, time.UTC) }
	l1, _ := logtail.New(tb, &logtail.Options{Clock: frozen, WriterID: "same"})
	l2, _ := logtail.New(tb, &logtail.Options{Clock: frozen, WriterID: "same"})
	t1, err := l1.Append(b.Ctx, &Claim{Employee: "E", ClaimID: "first"})
	if err != nil {
		t.Fatal(err)
	}
	t2, err := l2.Append(b.Ctx, &Claim{Employee: "E", ClaimID: "second"})
	if err != nil {
		t.Fatal(err)
	}
	if !t2.After(t1) {
		t.Fatalf("second append at %v, first at %v", t2, t1)
	}
	all, err := l1.Newest(b.Ctx, "E", 10)
	if err != nil || len(all) != 2 || all[0].ClaimID != "second" {
		t.Fatalf("entries %+v, %v", all, err)
	}
}

// AppendAt is idempotent: an entry is its time and id, so a rerun leaves one entry.
func TestAppendAtIsIdempotent(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	log, _ := logtail.New(claims(t, b), nil)
	at := time.Date(2024, 5, 1, 9, 30, 0, 0, time.UTC)
	for range 3 {
		if err := log.AppendAt(b.Ctx, at, "C1", &Claim{Employee: "E", ClaimID: "C1", Amount: 12.5}); err != nil {
			t.Fatal(err)
		}
	}
	if err := log.AppendAt(b.Ctx, at, "C2", &Claim{Employee: "E", ClaimID: "C2", Amount: 7}); err != nil {
		t.Fatal(err)
	}
	all, err := log.Newest(b.Ctx, "E", 10)
	if err != nil {
		t.Fatal(err)
	}
	ids := []string{}
	for _, c := range all {
		ids = append(ids, c.ClaimID)
	}
	if !slices.Equal(ids, []string{"C1", "C2"}) { // one tick: ordered by id
		t.Fatalf("entries %v, want [C1 C2]", ids)
	}
}

// Range selects from <= time < to exactly, at 100 ns resolution, newest first.
func TestRangeBounds(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	log, _ := logtail.New(claims(t, b), nil)
	base := time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC)
	tick := 100 * time.Nanosecond
	times := []time.Time{base.Add(-tick), base, base.Add(time.Hour - tick), base.Add(time.Hour), base.Add(2 * time.Hour)}
	for i, at := range times {
		if err := log.AppendAt(b.Ctx, at, fmt.Sprint(i), &Claim{Employee: "E", ClaimID: fmt.Sprint(i)}); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		from, to time.Time
		want     string
	}{
		{base, base.Add(time.Hour), "2,1"},
		{base.Add(-tick), base.Add(time.Hour + tick), "3,2,1,0"},
		{time.Time{}, base, "0"},
		{base.Add(time.Hour), time.Time{}, "4,3"},
		{time.Time{}, time.Time{}, "4,3,2,1,0"},
		{base.Add(time.Hour), base, ""},
		// Ends inside a tick: an entry at tick k is before any end inside tick k, and a
		// from inside tick k is after it.
		{base.Add(-tick), base.Add(50 * time.Nanosecond), "1,0"},
		{base.Add(50 * time.Nanosecond), base.Add(time.Hour + 50*time.Nanosecond), "3,2"},
		// An end after year 9999 is open.
		{base, time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), "4,3,2,1"},
	}
	for _, c := range cases {
		var got []string
		for v, err := range log.Range(b.Ctx, "E", c.from, c.to) {
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, v.ClaimID)
		}
		if strings.Join(got, ",") != c.want {
			t.Errorf("Range(%v, %v) = %v, want %s", c.from, c.to, got, c.want)
		}
	}
	// An entry stamped at the last tick is found by a "to" after year 9999.
	maxAt := time.Date(9999, 12, 31, 23, 59, 59, 999999900, time.UTC)
	if err := log.AppendAt(b.Ctx, maxAt, "max", &Claim{Employee: "M", ClaimID: "max"}); err != nil {
		t.Fatal(err)
	}
	var last []string
	for v, err := range log.Range(b.Ctx, "M", base, time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)) {
		if err != nil {
			t.Fatal(err)
		}
		last = append(last, v.ClaimID)
	}
	if !slices.Equal(last, []string{"max"}) {
		t.Fatalf("an entry at the maximum tick: %v", last)
	}
	// The same range paged with a resumable token.
	q := log.Query("E", time.Time{}, time.Time{})
	q.PageSize = 2
	p := log.Table().Pages(q)
	var n int
	for p.More() {
		page, err := p.Next(b.Ctx)
		if err != nil {
			t.Fatal(err)
		}
		n += len(page.Items)
	}
	if n != len(times) {
		t.Fatalf("paged %d entries", n)
	}
}

// Bad input is refused with a typed error before any request.
func TestInvalidInputSendsNothing(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	tb := claims(t, b)
	log, err := logtail.New(tb, nil)
	if err != nil {
		t.Fatal(err)
	}
	mark := b.Proxy().Count()
	at := time.Now()
	calls := map[string]error{}
	_, calls["newest 0"] = log.Newest(b.Ctx, "E", 0)
	_, calls["newest bad pk"] = log.Newest(b.Ctx, "a/b", 10)
	_, calls["append nil"] = log.Append(b.Ctx, nil)
	_, calls["append bad pk"] = log.Append(b.Ctx, &Claim{Employee: "a#b"})
	_, calls["append empty pk"] = log.Append(b.Ctx, &Claim{})
	calls["append at empty id"] = log.AppendAt(b.Ctx, at, "", &Claim{Employee: "E"})
	calls["append at bad id"] = log.AppendAt(b.Ctx, at, "x?y", &Claim{Employee: "E"})
	calls["append at huge"] = log.AppendAt(b.Ctx, at, "id", &Claim{Employee: "E", Description: strings.Repeat("x", 40000)})
	for _, err := range log.Range(b.Ctx, "bad\\pk", time.Time{}, time.Time{}) {
		calls["range bad pk"] = err
	}
	for name, err := range calls {
		var ie *repo.InvalidInputError
		if !errors.As(err, &ie) || !errors.Is(err, repo.ErrInvalidInput) {
			t.Errorf("%s: %v, want an *InvalidInputError", name, err)
		}
	}
	if n := b.Proxy().Count() - mark; n != 0 {
		t.Fatalf("%d requests sent for refused input", n)
	}

	type noKey struct {
		P string `table:",pk"`
	}
	type Inner struct {
		R string `table:",rk"`
	}
	type viaPointer struct {
		P string `table:",pk"`
		*Inner
	}
	for name, f := range map[string]func() error{
		"nil table":  func() error { _, err := logtail.New[Claim](nil, nil); return err },
		"bad prefix": func() error { _, err := logtail.New(tb, &logtail.Options{Prefix: "a/"}); return err },
		"bad writer": func() error { _, err := logtail.New(tb, &logtail.Options{WriterID: "w#1"}); return err },
		"long writer": func() error {
			_, err := logtail.New(tb, &logtail.Options{WriterID: strings.Repeat("w", 65)})
			return err
		},
		"no row key": func() error { _, err := repo.New[noKey](b.Clients.Tables, b.Table, nil); return err },
		"via pointer": func() error {
			pt, err := repo.New[viaPointer](b.Clients.Tables, b.Table, nil)
			if err != nil {
				return err
			}
			_, err = logtail.New(pt, nil)
			return err
		},
	} {
		if err := f(); !errors.Is(err, repo.ErrInvalidInput) {
			t.Errorf("%s: %v, want ErrInvalidInput", name, err)
		}
	}
}

// The key helpers agree with package keys, the project's single implementation of the
// guide's inverted ticks.
func TestKeysAgreeWithPackageKeys(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	log, _ := logtail.New(claims(t, b), nil)
	for _, at := range []time.Time{time.Unix(0, 0), time.Date(1601, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(9999, 12, 31, 23, 59, 59, 999999900, time.UTC)} {
		if got, want := log.RowKey(at, "i"), keys.InvertedTicksUnique(at, "i"); got != want {
			t.Fatalf("RowKey(%v) = %q, keys gives %q", at, got, want)
		}
	}
}
