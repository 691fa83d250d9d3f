// Command periodtable runs the high-volume delete pattern (the Azure Table storage design guide, "high-volume delete
// pattern") on the guide's data, on an embedded, in-memory Azurite: sign-in attempts are
// stored in one table per day, read across days with one fan-out query, and deleted after
// 60 days by dropping whole tables — one request per day, whatever it holds.
//
//	go run ./examples/periodtable            # on an embedded Azurite
//	go run ./examples/periodtable -use-env   # on the account of AZURE_STORAGE_CONNECTION_STRING
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/tablepatterns/tablepatterns/patterns/periodtable"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/repo/account"
	"github.com/tablepatterns/tablepatterns/repo/filter"
	"github.com/tablepatterns/tablepatterns/tabletest"
)

func main() { tabletest.Main("periodtable", run) }

// start runs the example on an embedded Azurite, or with useEnv on the account of
// AZURE_STORAGE_CONNECTION_STRING (it creates uniquely named tables and deletes them).
// SignIn is one sign-in attempt, as in the guide: one partition per user (inserts spread
// over partitions, no hot spot), the attempt's time in the RowKey, one table per day.
type SignIn struct {
	UserID      string    `table:",pk"`
	Attempt     string    `table:",rk"`
	AttemptTime time.Time `table:"AttemptTime"`
	Success     bool      `table:"Success"`
	ClientIP    string    `table:"ClientIP"`
}

var users = []string{"donh", "junc", "kenk", "jeffp", "jonesj"}

// clock is the example's simulated time, so that two months pass in a second.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time      { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) Set(t time.Time)     { c.mu.Lock(); c.now = t; c.mu.Unlock() }
func (c *clock) Add(d time.Duration) { c.Set(c.Now().Add(d)) }

// uniquePrefix returns a table-name prefix for this run: letters only.
func uniquePrefix() string {
	n := time.Now().UnixNano()
	var b strings.Builder
	b.WriteString("SignIns")
	for range 8 {
		b.WriteByte(byte('a' + n%26))
		n /= 26
	}
	return b.String()
}

func run(ctx context.Context, out io.Writer, connStr string) error {
	clients, err := account.NewClients(connStr, nil)
	if err != nil {
		return err
	}
	day0 := time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC)
	clk := &clock{now: day0}
	scheme := periodtable.Scheme{Prefix: uniquePrefix(), Period: periodtable.Daily}
	signIns, err := periodtable.New[SignIn](clients.Tables, scheme, "AttemptTime", &periodtable.Options{
		Retention: 60 * 24 * time.Hour, // the guide: delete sign-ins older than 60 days
		Clock:     clk.Now,
	})
	if err != nil {
		return err
	}
	defer cleanup(context.WithoutCancel(ctx), signIns)

	// A week of sign-ins, written as they happen: each day's go to that day's table.
	const days, perUserPerDay = 7, 12
	for d := range days {
		for u, user := range users {
			for i := range perUserPerDay {
				clk.Set(day0.AddDate(0, 0, d).Add(time.Duration(i*2)*time.Hour + time.Duration(u)*time.Minute))
				at := clk.Now()
				s := &SignIn{UserID: user, Attempt: at.Format("20060102T150405Z"), AttemptTime: at,
					Success: (i+u+d)%5 != 0, ClientIP: fmt.Sprintf("10.0.%d.%d", u, i)}
				if err := signIns.Insert(ctx, s); err != nil {
					return err
				}
			}
		}
	}
	tables, err := signIns.List(ctx, nil)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "stored %d sign-in attempts in %d daily tables:\n", days*len(users)*perUserPerDay, len(tables))
	for _, t := range tables {
		fmt.Fprintf(out, "  %s\n", t)
	}

	// Failed attempts of one user over three days: one fan-out query across three tables,
	// merged in period order.
	from, to := day0.AddDate(0, 0, 2), day0.AddDate(0, 0, 5)
	q := repo.Query{Filter: filter.And(filter.PartitionKey("jonesj"), filter.Eq("Success", false))}
	fmt.Fprintf(out, "failed sign-ins of jonesj in [%s, %s):\n", from.Format("2006-01-02"), to.Format("2006-01-02"))
	failed := 0
	for s, err := range signIns.Query(ctx, from, to, q, nil) {
		if err != nil {
			return err
		}
		failed++
		fmt.Fprintf(out, "  %s from %s\n", s.AttemptTime.Format(time.RFC3339), s.ClientIP)
	}
	fmt.Fprintf(out, "  %d failed attempts\n", failed)

	// Two months later the retention job runs: every day that ended more than 60 days ago
	// (plus the clock-skew margin) is dropped, one request per table.
	clk.Set(day0.AddDate(0, 0, 63).Add(12 * time.Hour))
	dropped, err := signIns.DropExpired(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "on %s the retention job dropped %d tables (one delete each):\n", clk.Now().Format("2006-01-02"), len(dropped))
	for _, t := range dropped {
		fmt.Fprintf(out, "  %s\n", t.Name)
	}
	left, err := signIns.List(ctx, nil)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "%d daily tables left\n", len(left))

	// A late sign-in for a dropped day is refused before any request: the dropped table's
	// name is never created again.
	late := day0.Add(3 * time.Hour)
	err = signIns.Insert(ctx, &SignIn{UserID: "donh", Attempt: "late", AttemptTime: late})
	if !errors.Is(err, repo.ErrInvalidInput) {
		return fmt.Errorf("a write to a dropped day was not refused: %v", err)
	}
	fmt.Fprintln(out, "a late sign-in for a dropped day: refused (ErrInvalidInput)")
	fmt.Fprintln(out, "period tables finished")
	return nil
}

// cleanup deletes the tables the run left (the example's own; a real application keeps
// them until they expire).
func cleanup(ctx context.Context, signIns *periodtable.Tables[SignIn]) {
	tables, err := signIns.List(ctx, nil)
	if err != nil {
		return
	}
	for _, t := range tables {
		if rt, err := signIns.Table(t); err == nil {
			_ = rt.DeleteTable(ctx)
		}
	}
}
