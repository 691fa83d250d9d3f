// Command dataseries runs the data series pattern (the Azure Table storage design guide, "data series pattern") on
// the guide's data, on an embedded, in-memory Azurite: the number of IM messages each
// employee sends is counted per hour, in one entity per employee and day holding 24
// properties, H00 to H23. Several workers count at once, some messages are delivered twice,
// and a chart of the last 24 hours needs one request per day touched.
//
//	go run ./examples/dataseries            # on an embedded Azurite
//	go run ./examples/dataseries -use-env   # on the account of AZURE_STORAGE_CONNECTION_STRING
package main

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/patterns/dataseries"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/repo/account"
	"github.com/tablepatterns/tablepatterns/tabletest"
)

func main() { tabletest.Main("dataseries", run) }

// start runs the example on an embedded Azurite, or with useEnv on the account of
// AZURE_STORAGE_CONNECTION_STRING (it creates uniquely named tables and deletes them).
// message is one IM message sent: the event the counters count.
type message struct {
	ID       string
	Employee string
	Sent     time.Time
}

var employees = []string{"000123", "000152", "000155"}

// traffic returns the day's messages, deterministically: busier during office hours.
func traffic(day time.Time) []message {
	rng := rand.New(rand.NewPCG(42, uint64(day.Unix())))
	var msgs []message
	for e, emp := range employees {
		for h := range 24 {
			n := 1 + rng.IntN(3)
			if h >= 9 && h < 18 {
				n += 4 + 2*e + rng.IntN(6)
			}
			for i := range n {
				sent := day.Add(time.Duration(h)*time.Hour + time.Duration(i*60/n)*time.Minute)
				msgs = append(msgs, message{ID: fmt.Sprintf("%s-%s-%02d", emp, sent.Format("20060102T1504"), i), Employee: emp, Sent: sent})
			}
		}
	}
	return msgs
}

func run(ctx context.Context, out io.Writer, connStr string) error {
	clients, err := account.NewClients(connStr, nil)
	if err != nil {
		return err
	}
	name := fmt.Sprintf("MessageStats%d", time.Now().UnixNano()%1e12)
	// A data series needs write tracking on its table: a retried Add whose response was
	// lost is then recognised, never applied twice.
	table, err := repo.New[codec.Entity](clients.Tables, name, &repo.Options{TrackWrites: true})
	if err != nil {
		return err
	}
	counts, err := dataseries.New[int32](table, dataseries.Layout{Points: 24, Prefix: "H"}, nil)
	if err != nil {
		return err
	}
	if err := counts.Table().CreateIfNotExists(ctx); err != nil {
		return err
	}
	defer counts.Table().DeleteTable(context.WithoutCancel(ctx))

	// Two days of messages. Every tenth is delivered twice (a queue redelivers at least
	// once); four workers count concurrently, each event with its id as the operation id.
	day1 := time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC)
	msgs := append(traffic(day1), traffic(day1.AddDate(0, 0, 1))...)
	shuffled := append([]message(nil), msgs...)
	rand.New(rand.NewPCG(1, 2)).Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	deliveries := make(chan message)
	go func() {
		defer close(deliveries)
		for i, m := range shuffled {
			deliveries <- m
			if i%10 == 0 {
				deliveries <- m
			}
		}
	}()
	var wg sync.WaitGroup
	errc := make(chan error, 4)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for m := range deliveries {
				_, err := counts.Add(ctx, m.Employee, m.Sent.Format("20060102"), m.Sent.Hour(), 1, &dataseries.AddOptions{OpID: m.ID})
				if err != nil {
					errc <- err
					for range deliveries { // drain, so that the sender ends
					}
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errc)
	if err := <-errc; err != nil {
		return err
	}
	dups := (len(msgs) + 9) / 10
	fmt.Fprintf(out, "delivered %d message events (%d of them twice) to 4 concurrent counters\n", len(msgs)+dups, dups)

	// One request per employee and day: the whole day's series.
	total := 0
	for _, emp := range employees {
		for _, day := range []time.Time{day1, day1.AddDate(0, 0, 1)} {
			s, err := counts.Get(ctx, emp, day.Format("20060102"))
			if err != nil {
				return err
			}
			n := 0
			for _, v := range s.Points {
				n += int(v)
			}
			total += n
			fmt.Fprintf(out, "  %s on %s: %4d messages\n", emp, day.Format("2006-01-02"), n)
		}
	}
	fmt.Fprintf(out, "counted %d messages: each once\n", total)
	if total != len(msgs) {
		return fmt.Errorf("counted %d messages, sent %d", total, len(msgs))
	}

	// The guide's chart: employee 000123's last 24 hours at 2024-05-02 10:00, from the two
	// entities of the days the window touches.
	now := day1.AddDate(0, 0, 1).Add(10 * time.Hour)
	yesterday, err := counts.Get(ctx, "000123", day1.Format("20060102"))
	if err != nil {
		return err
	}
	today, err := counts.Get(ctx, "000123", now.Format("20060102"))
	if err != nil {
		return err
	}
	window := append(yesterday.Points[now.Hour():], today.Points[:now.Hour()]...)
	fmt.Fprintf(out, "messages of 000123 in the 24 hours before %s (2 requests):\n", now.Format("2006-01-02 15:04"))
	for i, v := range window {
		at := now.Add(time.Duration(i-24) * time.Hour)
		fmt.Fprintf(out, "  %s %3d %s\n", at.Format("01-02 15h"), v, strings.Repeat("#", int(v)))
	}
	fmt.Fprintln(out, "data series finished")
	return nil
}
