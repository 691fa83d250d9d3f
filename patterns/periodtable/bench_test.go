package periodtable_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/tablepatterns/tablepatterns/internal/benchcmp"
	"github.com/tablepatterns/tablepatterns/patterns/periodtable"
	"github.com/tablepatterns/tablepatterns/repo"
)

// benchBed is setup's bed with clients whose requests are counted, and the two Tables
// (one that drops, one that writes): the one place this file builds clients and
// constructors.
func benchBed(b *testing.B, now time.Time) (*bed, *benchcmp.Counter, *periodtable.Tables[SignIn], *periodtable.Tables[SignIn]) {
	b.Helper()
	bd := setup(b, false)
	ctr := bd.CountRequests()
	bd.clients = bd.Clients
	clock := func() time.Time { return now }
	st := tables(b, bd, periodtable.Daily, &periodtable.Options{Retention: 24 * time.Hour, Clock: clock})
	writer := tables(b, bd, periodtable.Daily, &periodtable.Options{Clock: clock})
	return bd, ctr, st, writer
}

// BenchmarkDropPeriod deletes one day of 10,000 sign-in attempts (100 users × 100 attempts):
// by dropping the day's table (the pattern: one request), against the guide's naive way —
// scan the table, then delete each entity (ratio) — and against the improvement the guide
// mentions, deleting in entity group transactions of 100 (ratio-batched-100). Before each
// operation every side fills a fresh day's table (not timed, not counted); the three sides
// alternate in one run (benchcmp). One operation of the naive way takes seconds, so run it
// with a fixed count:
//
//	go test -run '^$' -bench BenchmarkDropPeriod -benchtime=2x ./patterns/periodtable/
func BenchmarkDropPeriod(b *testing.B) {
	const users, perUser = 100, 100
	bd, ctr, st, writer := benchBed(b, time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	day := 0
	var pt periodtable.Table
	var rt *repo.Table[SignIn]
	// fill writes 10,000 sign-ins into the table of a day never used before.
	fill := func(int) error {
		day++
		start := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC).AddDate(0, 0, day)
		var err error
		if pt, err = writer.Prepare(bd.ctx, start); err != nil {
			return err
		}
		if rt, err = writer.Table(pt); err != nil {
			return err
		}
		items := make([]*SignIn, 0, users*perUser)
		for u := range users {
			for i := range perUser {
				items = append(items, signIn(fmt.Sprintf("user%03d", u), start.Add(time.Duration(i)*time.Minute), i%7 != 0))
			}
		}
		return rt.BulkWrite(bd.ctx, items, nil)
	}
	// scan reads the keys of every entity of the table, as the naive way must.
	scan := func() ([]SignIn, error) {
		all, err := rt.Collect(bd.ctx, repo.Query{Select: []string{"PartitionKey", "RowKey"}})
		if err != nil {
			return nil, err
		}
		return all, benchcmp.Check("entities", len(all), users*perUser)
	}

	benchcmp.Run(b, &benchcmp.Options{GC: true, Requests: ctr.Count, Items: users * perUser, Unit: "entities", Warmup: -1},
		benchcmp.Side{Name: "drop-table", Prepare: fill, Op: func(int) error {
			return st.Drop(bd.ctx, pt)
		}},
		benchcmp.Side{Name: "one-by-one", Prepare: fill, Op: func(int) error {
			all, err := scan()
			if err != nil {
				return err
			}
			for _, s := range all {
				if err := rt.Delete(bd.ctx, s.UserID, s.Attempt, nil); err != nil {
					return err
				}
			}
			return nil
		}},
		benchcmp.Side{Name: "batched-100", Prepare: fill, Op: func(int) error {
			all, err := scan()
			if err != nil {
				return err
			}
			for i := 0; i < len(all); i += repo.MaxTransactionActions { // one user per 100
				actions := make([]repo.Action, 0, repo.MaxTransactionActions)
				for _, s := range all[i:min(i+repo.MaxTransactionActions, len(all))] {
					actions = append(actions, rt.DeleteAction(s.UserID, s.Attempt, nil))
				}
				if _, err := repo.Submit(bd.ctx, actions...); err != nil {
					return err
				}
			}
			return nil
		}})
}
