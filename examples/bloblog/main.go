// Command bloblog runs the log data anti-pattern's solution (the Azure Table storage design guide): log records go to
// blobs named <source>/YYYY/MM/DD/hhmm/NNNNNN.log, as Storage Analytics writes its logs,
// with the first and last record times in each blob's metadata; a time range is read back
// by listing name prefixes. It answers the guide's question: every error and critical
// message an application logged between 15:04 and 15:06 of one day.
//
//	go run ./examples/bloblog
//
// It starts an embedded, in-memory Azurite on loopback. With -use-env it runs against the
// account of AZURE_STORAGE_CONNECTION_STRING instead (it creates a container with a unique
// name and deletes it at the end).
package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"time"

	"github.com/tablepatterns/tablepatterns/patterns/bloblog"
	"github.com/tablepatterns/tablepatterns/repo/account"
	"github.com/tablepatterns/tablepatterns/retry"
	"github.com/tablepatterns/tablepatterns/tabletest"
)

func main() { tabletest.Main("bloblog", run) }

// day is the guide's date: 2014-07-31.
var day = time.Date(2014, 7, 31, 0, 0, 0, 0, time.UTC)

var levels = []string{"Info", "Info", "Info", "Info", "Warning", "Info", "Info", "Error", "Info", "Info", "Info", "Critical"}

// record is the n-th log message, n seconds after 14:58:00: a request log line.
func record(n int) bloblog.Record {
	level := levels[n%len(levels)]
	msg := fmt.Sprintf("level=%s request=%d path=/orders/%d status=%d", level, n, 200000+n%997, map[string]int{"Info": 200, "Warning": 404, "Error": 500, "Critical": 503}[level])
	return bloblog.Record{Time: day.Add(14*time.Hour + 58*time.Minute + time.Duration(n)*time.Second), Data: []byte(msg)}
}

func run(ctx context.Context, out io.Writer, connStr string) error {
	clients, err := account.NewClients(connStr, nil)
	if err != nil {
		return err
	}
	cname := fmt.Sprintf("logs-%d", time.Now().UnixNano()%1e9)
	if err := bloblog.CreateContainer(ctx, clients.Blobs, cname, retry.Policy{}); err != nil {
		return err
	}
	defer clients.Blobs.DeleteContainer(context.WithoutCancel(ctx), cname, nil)

	// The application logs 14:58 to 16:05, one request a second. The writer buffers and
	// appends a block whenever 64 KiB are buffered; Close flushes the rest.
	w, err := bloblog.NewWriter(clients.Blobs, cname, "webapp", &bloblog.Options{FlushBytes: 64 << 10})
	if err != nil {
		return err
	}
	const n = 67 * 60
	for i := 0; i < n; i++ {
		if err := w.Write(ctx, record(i)); err != nil {
			return err
		}
	}
	if err := w.Close(ctx); err != nil {
		return err
	}
	st := w.Stats()
	fmt.Fprintf(out, "wrote %d records (%d KiB) in %d appends to %d blobs; nothing left buffered: %v\n", st.Records, st.Bytes>>10, st.Appends, st.Blobs, st.Buffered == 0)

	// 15:04 to 15:06: one prefix listing, "webapp/2014/07/31/1500".
	r, err := bloblog.NewReader(clients.Blobs, cname, nil)
	if err != nil {
		return err
	}
	from, to := day.Add(15*time.Hour+4*time.Minute), day.Add(15*time.Hour+6*time.Minute)
	blobs, err := r.List(ctx, "webapp", from, to)
	if err != nil {
		return err
	}
	for _, b := range blobs {
		fmt.Fprintf(out, "blob %s: %d KiB, records %s to %s\n", b.Name, b.Size>>10, b.First.Format("15:04:05"), b.Last.Format("15:04:05"))
	}
	var total, bad int
	for rec, err := range r.Read(ctx, "webapp", from, to) {
		if err != nil {
			return err
		}
		total++
		if bytes.HasPrefix(rec.Data, []byte("level=Error")) || bytes.HasPrefix(rec.Data, []byte("level=Critical")) {
			bad++
			if bad <= 3 {
				fmt.Fprintf(out, "  %s %s\n", rec.Time.Format("15:04:05"), rec.Data)
			}
		}
	}
	fmt.Fprintf(out, "15:04-15:06: %d records, %d errors and critical messages\n", total, bad)
	fmt.Fprintln(out, "blob log example finished")
	return nil
}
