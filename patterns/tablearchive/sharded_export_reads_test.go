package tablearchive

import (
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
	"github.com/tablepatterns/tablepatterns/internal/testenv"
	"github.com/tablepatterns/tablepatterns/patterns/internal/archivetest"
	"github.com/tablepatterns/tablepatterns/queueworker"
	"github.com/tablepatterns/tablepatterns/repo/account"
	"github.com/tablepatterns/tablepatterns/retry"
)

// A sharded export reads each partition one request at a time, and a throttled shard
// slows alone: one hot partition (300 entities) and six cold ones (60 each), exported in
// three shards (the hot partition alone in the last) by three worker processes, pages of
// 20 entities. The hot shard's reads are answered 503 ServerBusy ("The server is busy.",
// a partition's answer) until both cold shards have created their shard manifests. From
// every table read the workers sent (partitionLoad: the throughput model does not tell a
// range scan's partitions): no partition ever had two scanning reads in flight at once
// (plan, shards, combine; the jobs' one-entity existence checks aside), the cold
// shards' reads were all admitted, some between the hot shard's refusals and each
// before its last (they ran beside it, not behind it), no job failed or was retried,
// and the export completes.
func TestShardedExportReadsEachPartitionOneRequestAtATime(t *testing.T) {
	t.Parallel()
	ps := testenv.Proxies(t)
	const hot, cold, hotN, coldN = "P-hot", 6, 300, 60
	parts := []string{hot}
	var items []*codec.Entity
	for i := range hotN {
		items = append(items, employee(hot, fmt.Sprintf("%05d", i), 30))
	}
	for p := range cold {
		pk := fmt.Sprintf("P-cold%d", p)
		parts = append(parts, pk)
		for i := range coldN {
			items = append(items, employee(pk, fmt.Sprintf("%05d", i), 40))
		}
	}
	load := newPartitionLoad(parts)
	clientsOf := func() *account.Clients {
		c, err := account.NewClients(ps.ConnectionString, &account.ClientOptions{Transport: load})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	clients := clientsOf()
	current := archivetest.NewTable(t, clients, "Current")
	if err := current.BulkWrite(t.Context(), items, nil); err != nil {
		t.Fatal(err)
	}
	container, queue := testenv.ContainerName(t), testenv.QueueName(t)
	// Enough retries for the hot shard to wait out its refusals without failing its job,
	// about ten a second.
	patient := retry.Policy{Delay: 50 * time.Millisecond, MinDelay: 20 * time.Millisecond, MaxDelay: 100 * time.Millisecond, MaxRetries: 1000}
	var workers []func()
	var ws []*queueworker.Worker
	var enqueue func() error
	for i := range 3 {
		a, err := New(clientsOf(), &Options{Retry: patient})
		if err != nil {
			t.Fatal(err)
		}
		w, c := archivetest.NewWorker(t, a.clients, queue, a.Register)
		a.opts.Queue = c
		workers = append(workers, func() { drain(t, w) })
		ws = append(ws, w)
		if i == 0 {
			enqueue = func() error {
				return EnqueueArchiveTable(t.Context(), c, ArchiveTableJob{Table: current.Name(), Container: container, Sealed: true, Shards: 4})
			}
		}
	}
	ps.Table.EmulatePaging(20, false)
	ps.Table.AddRule(faultproxy.Rule{
		Name: "hot shard busy",
		Match: func(r *http.Request) bool {
			if !faultproxy.IsListEntities(r) || load.shardManifests() >= 2 {
				return false
			}
			low, high := filterRange(filterOf(r))
			return low != "" && (readEvent{low: low, high: high}).covers(hot)
		},
		Action: faultproxy.Respond(http.StatusServiceUnavailable, "ServerBusy"),
	})
	if err := enqueue(); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for _, run := range workers {
		wg.Go(run)
	}
	wg.Wait()

	maxReads, _, reads, probes := load.stats()
	for _, p := range parts {
		if maxReads[p] != 1 {
			t.Errorf("partition %s had %d reads in flight at once, want 1", p, maxReads[p])
		}
	}
	firstHotRefusal, lastHotRefusal, hotAdmitted := -1, -1, 0
	for _, e := range reads {
		if e.low != "" && e.covers(hot) {
			switch e.status {
			case http.StatusServiceUnavailable:
				if firstHotRefusal < 0 {
					firstHotRefusal = e.seq
				}
				lastHotRefusal = e.seq
			case http.StatusOK:
				hotAdmitted++
			}
		}
	}
	if lastHotRefusal < 0 || hotAdmitted == 0 {
		t.Fatalf("the hot shard was refused until %d and admitted %d times: the test did not throttle it", lastHotRefusal, hotAdmitted)
	}
	// The hot shard is let through once it asks after the cold shards' manifests exist;
	// between its last refusal and that ask it waits out its backoff, and cold reads may
	// land there. A cold read after the hot shard's first admission waited behind it.
	hotLetThrough := -1
	for _, e := range reads {
		if e.low != "" && e.covers(hot) && e.status == http.StatusOK && e.seq > lastHotRefusal {
			hotLetThrough = e.seq
			break
		}
	}
	coldReads, beside := 0, 0
	for _, e := range reads {
		if e.covers(hot) || (e.low == "" && e.high == "") {
			continue // the hot shard's, or a whole-table scan (plan, combine)
		}
		coldReads++
		if e.seq > firstHotRefusal && e.seq < lastHotRefusal {
			beside++
		}
		if e.status != http.StatusOK || hotLetThrough >= 0 && e.seq > hotLetThrough {
			t.Errorf("a cold shard's read [%q, %q) answered %d as read %d, after the hot shard was let through (read %d): it waited behind the hot shard",
				e.low, e.high, e.status, e.seq, hotLetThrough)
		}
	}
	t.Logf("%d scanning reads and %d one-entity reads; cold shards' reads %d (%d between the hot shard's first and last refusals, reads %d and %d), hot shard's admitted %d; most reads in flight per partition %v",
		len(reads), probes, coldReads, beside, firstHotRefusal, lastHotRefusal, hotAdmitted, maxReads)
	if coldReads < 2*9 || beside == 0 { // two cold shards of 180 entities each: 9 pages each
		t.Fatalf("%d cold shard reads, %d of them while the hot shard was refused", coldReads, beside)
	}
	for i, w := range ws {
		if s := w.Stats(); s.Failed+s.Retried+s.Poisoned != 0 {
			t.Errorf("worker %d: jobs failed or retried (%+v): the hot shard's refusals reached its job", i, s)
		}
	}
	if ok, err := current.Exists(t.Context()); err != nil || ok {
		t.Fatalf("the table still exists: %v %v", ok, err)
	}
	a, err := New(clients, nil)
	if err != nil {
		t.Fatal(err)
	}
	m, err := a.ReadManifest(t.Context(), container, current.Name())
	if err != nil || m.Shards != 3 || m.Entities != int64(len(items)) {
		t.Fatalf("manifest %+v (%v), want 3 shards of %d entities", m, err, len(items))
	}
}
