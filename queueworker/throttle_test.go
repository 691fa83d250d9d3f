package queueworker

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
	"github.com/tablepatterns/tablepatterns/internal/testenv"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/repo/account"
)

// row is what the throttled handler stores: one entity per message.
type row struct {
	PK string `table:",pk"`
	RK string `table:",rk"`
	N  int64  `table:"N"`
}

// TestLoadWorkerUnderSustainedThrottling drains rounds of 140 messages whose handler
// inserts one entity each into one partition of a table behind the throughput model (20
// entities/s per partition, 200 for the account: the published targets scaled down a
// hundred times), with the worker's default concurrency (16) and the repo's default retry
// policy, until the model has refused requests in workerSteadySeconds whole seconds. Over
// the span of sustained throttling (the first of those seconds to the last) the table
// requests sent stay bounded against those admitted (no retry storm; the 1.2x target is
// logged, not yet met), every entity ends stored exactly once, no message is poisoned, and
// every refused request is followed by a logged retry (or, when the policy gave up, by the
// message's redelivery). It waits on the model, not on a window: a machine too busy to
// reach the limit only makes the run longer.
func TestLoadWorkerUnderSustainedThrottling(t *testing.T) {
	// maxRounds ends a run that never reaches the limit (5,600 messages, 280 s at it).
	const perRound, partitions, maxRounds = 140, 1, 40
	b := setup(t)
	ps := testenv.Proxies(t)
	model, err := ps.Table.EmulateThrottling(&faultproxy.ThrottleOptions{PartitionRate: faultproxy.PartitionTarget / 100, AccountRate: faultproxy.AccountTarget / 100})
	if err != nil {
		t.Fatal(err)
	}
	clients, err := account.NewClients(ps.ConnectionString, nil)
	if err != nil {
		t.Fatal(err)
	}
	core, logs := observer.New(zap.WarnLevel)
	tb, err := repo.New[row](clients.Tables, testenv.TableName(t), &repo.Options{Logger: zap.New(core)})
	if err != nil {
		t.Fatal(err)
	}
	if err := tb.CreateIfNotExists(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tb.DeleteTable(context.Background()) })

	var gaveUp atomic.Int64
	reg := NewRegistry()
	MustHandle(reg, "store", func(ctx context.Context, msg *Message[item]) error {
		e := &row{PK: fmt.Sprintf("P%d", msg.Payload.N%partitions), RK: msg.ID, N: int64(msg.Payload.N)}
		err := tb.Insert(ctx, e)
		if errors.Is(err, repo.ErrAlreadyExists) {
			// An earlier delivery stored it (its delete was lost): done if it is ours.
			got, gerr := tb.Get(ctx, e.PK, e.RK)
			if gerr != nil {
				return gerr
			}
			if got.N != e.N {
				return fmt.Errorf("entity %s/%s holds %d, want %d", e.PK, e.RK, got.N, e.N)
			}
			return nil
		}
		if errors.Is(err, repo.ErrTransient) {
			gaveUp.Add(1)
		}
		return err
	})
	w := b.worker(b.config(reg))
	want := map[string]int64{} // the id of every message enqueued, to its N
	model.Reset()
	start := time.Now()
	for round := 0; len(throttledSeconds(model.Stats())) < workerSteadySeconds; round++ {
		if round == maxRounds {
			t.Fatalf("%d messages drained in %v and the model refused requests in only %d whole seconds, want %d: the load never held the limit",
				len(want), time.Since(start).Round(time.Second), len(throttledSeconds(model.Stats())), workerSteadySeconds)
		}
		for i, id := range b.enqueue("store", fmt.Sprintf("m%d", round), perRound) {
			want[id] = int64(i)
		}
		b.drain(w)
	}
	elapsed := time.Since(start)
	n := len(want)

	st := model.Stats()
	secs := throttledSeconds(st)
	// Every second of the span counts, the ones the Gate kept just under the limit too.
	var sent, admitted int64
	for _, c := range st.Seconds[secs[0] : secs[len(secs)-1]+1] {
		sent += c.AdmittedRequests + c.RefusedRequests
		admitted += c.AdmittedRequests
	}
	perSecond := make([]int64, len(secs))
	for i, sec := range secs {
		perSecond[i] = st.Seconds[sec].AdmittedEntities
	}
	slices.Sort(perSecond)
	atLimit := perSecond[len(perSecond)/2]
	ws := w.Stats()
	t.Logf("drained %d messages in %v; throttled from second %d to %d (%d refusing): %d table requests sent, %d admitted: ratio %.2f; median %d entities/s in a refusing second; model: %d admitted, %d refused; %d retries logged, %d handlers gave up; worker %+v",
		n, elapsed.Round(time.Millisecond), secs[0], secs[len(secs)-1], len(secs), sent, admitted, float64(sent)/float64(admitted), atLimit, st.Total.AdmittedRequests, st.Total.RefusedRequests, logs.FilterMessage("retrying").Len(), gaveUp.Load(), ws)
	// The target is about 1.2x sent per admitted request: the retry.Gate of the clients account.NewClients builds
	// keeps the client near 1x (see repo/throttle_test.go, stormBound).
	const retryStormTarget, stormBound = 1.2, 1.5
	if r := float64(sent) / float64(admitted); r > stormBound {
		t.Errorf("retry storm: %d requests sent for %d admitted (%.2fx, bound %.1fx)", sent, admitted, r, stormBound)
	} else if r > retryStormTarget {
		t.Logf("retry ratio %.2fx is above the target of %.1fx", r, retryStormTarget)
	}
	// The worker keeps the partition busy when it is throttled: the median, so that a
	// second in which a busy machine starved the handlers does not move it.
	if limit := int64(faultproxy.PartitionTarget / 100); float64(atLimit) < 0.7*float64(limit) {
		t.Errorf("%d entities/s admitted in the median second at the limit, want close to the partition's %d", atLimit, limit)
	}
	retries := logs.FilterMessage("retrying").All()
	if int64(len(retries))+gaveUp.Load() != st.Total.RefusedRequests {
		t.Errorf("%d retries logged and %d handlers gave up for %d refused requests", len(retries), gaveUp.Load(), st.Total.RefusedRequests)
	}
	for _, e := range retries {
		if f := e.ContextMap(); f["errorCode"] != "ServerBusy" || f["status"] != int64(http.StatusServiceUnavailable) {
			t.Fatalf("retry log %v, want one naming 503 ServerBusy", f)
		}
	}
	// Exactly once: every message's entity, nothing else, read past the proxy.
	direct, err := account.NewClients(testenv.ConnectionString(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	dt, err := repo.New[row](direct.Tables, tb.Name(), nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := dt.Collect(t.Context(), repo.Query{})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range got {
		if v, ok := want[e.RK]; !ok || v != e.N || e.PK != fmt.Sprintf("P%d", v%partitions) {
			t.Fatalf("unexpected or duplicated entity %+v", e)
		}
		delete(want, e.RK)
	}
	if len(want) != 0 || len(got) != n {
		t.Fatalf("%d entities stored, want %d (%d missing)", len(got), n, len(want))
	}
	if poisoned, err := b.dsvc.NewQueueClient(b.name+PoisonSuffix).PeekMessages(t.Context(), nil); err == nil && len(poisoned.Messages) > 0 {
		t.Fatalf("%d messages poisoned", len(poisoned.Messages))
	}
}

// workerSteadySeconds is how many whole seconds in which the model refused requests the
// worker's load test waits for; it measures the requests over the span from the first
// such second to the last (as repo's BulkWrite load test does).
const workerSteadySeconds = 6

// throttledSeconds returns the whole seconds after the first (second 0 holds the buckets'
// initial burst, the last one is still running) in which the model refused requests.
func throttledSeconds(st faultproxy.ThrottleStats) []int {
	var out []int
	for i := 1; i < len(st.Seconds)-1; i++ {
		if st.Seconds[i].RefusedRequests > 0 {
			out = append(out, i)
		}
	}
	return out
}
