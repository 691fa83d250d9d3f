package periodtable_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/tablepatterns/tablepatterns/patterns/periodtable"
	"github.com/tablepatterns/tablepatterns/repo"
)

// BenchmarkDropPeriod deletes one day of 10,000 sign-in attempts (100 users × 100 attempts):
// by dropping the day's table (the pattern: one request), against the guide's naive way —
// scan the table, then delete each entity — and against the improvement the guide mentions,
// deleting in entity group transactions of 100. Each iteration first fills a fresh day's
// table (not timed). One iteration of the naive way takes seconds, so run it with a fixed
// count:
//
//	go test -run '^$' -bench BenchmarkDropPeriod -benchtime=2x -benchmem ./patterns/periodtable/
func BenchmarkDropPeriod(b *testing.B) {
	const users, perUser = 100, 100
	bd := setup(b, false)
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	st := tables(b, bd, periodtable.Daily, &periodtable.Options{Retention: 24 * time.Hour, Clock: func() time.Time { return now }})
	writer := tables(b, bd, periodtable.Daily, &periodtable.Options{Clock: func() time.Time { return now }})
	day := 0
	// fill writes 10,000 sign-ins into the table of a day never used before.
	fill := func(b *testing.B) (periodtable.Table, *repo.Table[SignIn]) {
		day++
		start := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC).AddDate(0, 0, day)
		pt, err := writer.Prepare(bd.ctx, start)
		if err != nil {
			b.Fatal(err)
		}
		rt, err := writer.Table(pt)
		if err != nil {
			b.Fatal(err)
		}
		items := make([]*SignIn, 0, users*perUser)
		for u := range users {
			for i := range perUser {
				items = append(items, signIn(fmt.Sprintf("user%03d", u), start.Add(time.Duration(i)*time.Minute), i%7 != 0))
			}
		}
		if err := rt.BulkWrite(bd.ctx, items, nil); err != nil {
			b.Fatal(err)
		}
		return pt, rt
	}
	// scan reads the keys of every entity of the table, as the naive way must.
	scan := func(b *testing.B, rt *repo.Table[SignIn]) []SignIn {
		all, err := rt.Collect(bd.ctx, repo.Query{Select: []string{"PartitionKey", "RowKey"}})
		if err != nil || len(all) != users*perUser {
			b.Fatalf("scan: %d entities, %v", len(all), err)
		}
		return all
	}

	b.Run("impl=drop-table", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			b.StopTimer()
			pt, _ := fill(b)
			b.StartTimer()
			if err := st.Drop(bd.ctx, pt); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(users*perUser, "entities/op")
	})
	b.Run("impl=delete-one-by-one", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			b.StopTimer()
			_, rt := fill(b)
			b.StartTimer()
			for _, s := range scan(b, rt) {
				if err := rt.Delete(bd.ctx, s.UserID, s.Attempt, nil); err != nil {
					b.Fatal(err)
				}
			}
		}
		b.ReportMetric(users*perUser, "entities/op")
	})
	b.Run("impl=delete-batched-100", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			b.StopTimer()
			_, rt := fill(b)
			b.StartTimer()
			all := scan(b, rt)
			for i := 0; i < len(all); i += repo.MaxTransactionActions { // one user per 100
				actions := make([]repo.Action, 0, repo.MaxTransactionActions)
				for _, s := range all[i:min(i+repo.MaxTransactionActions, len(all))] {
					actions = append(actions, rt.DeleteAction(s.UserID, s.Attempt, nil))
				}
				if _, err := repo.Submit(bd.ctx, actions...); err != nil {
					b.Fatal(err)
				}
			}
		}
		b.ReportMetric(users*perUser, "entities/op")
	})
}
