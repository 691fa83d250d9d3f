package queueworker

import (
	"context"
	"errors"
	"fmt"
	"net/http"
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

// TestLoadWorkerUnderSustainedThrottling drains 280 messages whose handler inserts one
// entity each into one partition of a table behind the throughput model (20 entities/s per
// partition, 200 for the account: the published targets scaled down a hundred times), with
// the worker's default concurrency (16) and the repo's default retry policy: about 14 s
// of sustained throttling. Over the 10 s window after the initial burst the table
// requests sent stay bounded against those admitted (no retry storm; the 1.2x target is
// logged, not yet met), every entity ends
// stored exactly once, no message is poisoned, and every refused request is followed by
// a logged retry (or, when the policy gave up, by the message's redelivery).
func TestLoadWorkerUnderSustainedThrottling(t *testing.T) {
	const n, partitions = 280, 1
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
	ids := b.enqueue("store", "m", n)
	w := b.worker(b.config(reg))
	model.Reset()
	start := time.Now()
	b.drain(w)
	elapsed := time.Since(start)

	st := model.Stats()
	if len(st.Seconds) < 11 {
		t.Fatalf("the load lasted %d seconds, want at least 11 of sustained throttling", len(st.Seconds))
	}
	var sent, admitted int64
	for _, c := range st.Seconds[1:11] {
		sent += c.AdmittedRequests + c.RefusedRequests
		admitted += c.AdmittedRequests
	}
	ws := w.Stats()
	t.Logf("drained %d messages in %v; window: %d table requests sent, %d admitted: ratio %.2f; model: %d admitted, %d refused; %d retries logged, %d handlers gave up; worker %+v",
		n, elapsed.Round(time.Millisecond), sent, admitted, float64(sent)/float64(admitted), st.Total.AdmittedRequests, st.Total.RefusedRequests, logs.FilterMessage("retrying").Len(), gaveUp.Load(), ws)
	// The target is about 1.2x sent per admitted request: the retry.Gate of the clients account.NewClients builds
	// keeps the client near 1x (see repo/throttle_test.go, stormBound).
	const retryStormTarget, stormBound = 1.2, 1.5
	if r := float64(sent) / float64(admitted); r > stormBound {
		t.Errorf("retry storm: %d requests sent for %d admitted (%.2fx, bound %.1fx)", sent, admitted, r, stormBound)
	} else if r > retryStormTarget {
		t.Logf("retry ratio %.2fx is above the target of %.1fx", r, retryStormTarget)
	}
	// The worker keeps the partition busy: close to its limit over the window.
	if limit := float64(faultproxy.PartitionTarget / 100); float64(admitted)/10 < 0.7*limit {
		t.Errorf("%.0f entities/s admitted over the window, want close to the partition's %.0f", float64(admitted)/10, limit)
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
	want := map[string]int64{}
	for i, id := range ids {
		want[id] = int64(i)
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
