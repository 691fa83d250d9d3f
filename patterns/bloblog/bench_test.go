package bloblog_test

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/streaming"

	"github.com/tablepatterns/tablepatterns/internal/benchcmp"
	"github.com/tablepatterns/tablepatterns/internal/testenv"
	"github.com/tablepatterns/tablepatterns/patterns/bloblog"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/repo/account"
	"github.com/tablepatterns/tablepatterns/repo/filter"
)

// LogEntity is the table form of a log record that the guide advises against: spread over
// partitions by source instance, so a time range has to scan them all.
type LogEntity struct {
	PartitionKey string    `table:",pk"`
	RowKey       string    `table:",rk"`
	Time         time.Time `table:"LogTime"`
	Message      string    `table:"Message"`
}

// benchBed builds, on clients whose requests are counted, a container and the table of
// the anti-pattern: the one place this file builds clients and constructors (besides the
// Writer each operation opens).
func benchBed(b *testing.B) (*account.Clients, string, *repo.Table[LogEntity], *benchcmp.Counter) {
	b.Helper()
	ctr := benchcmp.NewCounter()
	clients, err := account.NewClients(testenv.ConnectionString(b), &account.ClientOptions{Transport: ctr})
	if err != nil {
		b.Fatal(err)
	}
	cname := testenv.ContainerName(b)
	if _, err := clients.Blobs.CreateContainer(context.Background(), cname, nil); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _, _ = clients.Blobs.DeleteContainer(context.Background(), cname, nil) })
	name := testenv.TableName(b)
	testenv.Table(b, name)
	tb, err := repo.New[LogEntity](clients.Tables, name, nil)
	if err != nil {
		b.Fatal(err)
	}
	return clients, cname, tb, ctr
}

func logLine(i int) bloblog.Record {
	return bloblog.Record{Time: t0.Add(time.Duration(i) * time.Second), Data: fmt.Appendf(nil, "level=Info request=%d path=/orders/%d status=200", i, 200000+i%997)}
}

// BenchmarkWriteLog stores 1,000 log records: buffered appends (bloblog), against one
// append per record (ratio) and one table insert per record (ratio-table-insert, the log
// data anti-pattern), alternated operation by operation in one run (benchcmp).
//
//	go test -run '^$' -bench . -benchtime=5x ./patterns/bloblog/
func BenchmarkWriteLog(b *testing.B) {
	clients, cname, tb, ctr := benchBed(b)
	ctx := context.Background()
	const n = 1000
	benchcmp.Run(b, &benchcmp.Options{GC: true, Requests: ctr.Count, Items: n, Unit: "records"},
		benchcmp.Side{Name: "buffered", Op: func(run int) error {
			w, err := bloblog.NewWriter(clients.Blobs, cname, fmt.Sprintf("buffered%d", run), &bloblog.Options{FlushInterval: -1})
			if err != nil {
				return err
			}
			for i := range n {
				if err := w.Write(ctx, logLine(i)); err != nil {
					return err
				}
			}
			return w.Close(ctx)
		}},
		benchcmp.Side{Name: "append-per-record", Op: func(run int) error {
			c := clients.Blobs.ServiceClient().NewContainerClient(cname).NewAppendBlobClient(fmt.Sprintf("each%d/log", run))
			if _, err := c.Create(ctx, nil); err != nil {
				return err
			}
			for i := range n {
				r := logLine(i)
				line := append(append([]byte(r.Time.Format(time.RFC3339Nano)+"\t"), r.Data...), '\n')
				if _, err := c.AppendBlock(ctx, streaming.NopCloser(bytes.NewReader(line)), nil); err != nil {
					return err
				}
			}
			return nil
		}},
		benchcmp.Side{Name: "table-insert", Op: func(run int) error {
			for i := range n {
				r := logLine(i)
				e := &LogEntity{PartitionKey: fmt.Sprintf("web%02d", i%16), RowKey: fmt.Sprintf("%d_%06d", run, i), Time: r.Time, Message: string(r.Data)}
				if err := tb.Insert(ctx, e); err != nil {
					return err
				}
			}
			return nil
		}})
}

// BenchmarkReadLogRange reads two minutes (120 records) out of three hours of log
// (10,800 records): bloblog's prefix listing and one blob download, against a scan of a
// table whose log entities are spread over 16 partitions (the guide's second design),
// alternated operation by operation in one run (benchcmp).
func BenchmarkReadLogRange(b *testing.B) {
	clients, cname, tb, ctr := benchBed(b)
	ctx := context.Background()
	const n = 3 * 3600
	w, err := bloblog.NewWriter(clients.Blobs, cname, "web", &bloblog.Options{FlushInterval: -1})
	if err != nil {
		b.Fatal(err)
	}
	items := make([]*LogEntity, n)
	for i := range n {
		r := logLine(i)
		if err := w.Write(ctx, r); err != nil {
			b.Fatal(err)
		}
		items[i] = &LogEntity{PartitionKey: fmt.Sprintf("web%02d", i%16), RowKey: fmt.Sprintf("%06d", i), Time: r.Time, Message: string(r.Data)}
	}
	if err := w.Close(ctx); err != nil {
		b.Fatal(err)
	}
	if err := tb.BulkWrite(ctx, items, nil); err != nil {
		b.Fatal(err)
	}
	reader, err := bloblog.NewReader(clients.Blobs, cname, nil)
	if err != nil {
		b.Fatal(err)
	}
	from, to := t0.Add(64*time.Minute), t0.Add(66*time.Minute)
	benchcmp.Run(b, &benchcmp.Options{GC: true, Requests: ctr.Count},
		benchcmp.Side{Name: "blob-prefix", Op: func(int) error {
			got := 0
			for _, err := range reader.Read(ctx, "web", from, to) {
				if err != nil {
					return err
				}
				got++
			}
			return benchcmp.Check("records", got, 120)
		}},
		benchcmp.Side{Name: "table-scan", Op: func(int) error {
			got, err := tb.Collect(ctx, repo.Query{Filter: filter.And(filter.Ge("LogTime", from), filter.Lt("LogTime", to))})
			if err != nil {
				return err
			}
			return benchcmp.Check("records", len(got), 120)
		}})
}
