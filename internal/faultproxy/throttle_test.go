package faultproxy_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"

	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
	"github.com/tablepatterns/tablepatterns/internal/testenv"
)

// fakeClock is the model's clock in these tests: time moves only when the test says so,
// so that every admission is exact.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{now: time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// throttled asserts that err is the model's 503 ServerBusy with the given message, as
// aztables parses it.
func throttled(t *testing.T, err error, message string) {
	t.Helper()
	var re *azcore.ResponseError
	if !errors.As(err, &re) {
		t.Fatalf("err = %v, want a 503 ServerBusy response", err)
	}
	if re.StatusCode != http.StatusServiceUnavailable || re.ErrorCode != "ServerBusy" {
		t.Fatalf("got %d %q, want 503 ServerBusy", re.StatusCode, re.ErrorCode)
	}
	if !strings.Contains(err.Error(), message) {
		t.Fatalf("error lacks the service's message %q: %v", message, err)
	}
}

func TestThrottleEnforcesThePartitionLimit(t *testing.T) {
	t.Parallel()
	p, tc, direct := proxiedTable(t)
	clock := newFakeClock()
	th, err := p.EmulateThrottling(&faultproxy.ThrottleOptions{PartitionRate: 10, PartitionBurst: 5, AccountRate: -1, Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		if _, err := tc.AddEntity(t.Context(), entity(t, "a", fmt.Sprint(i)), nil); err != nil {
			t.Fatalf("insert %d within the burst: %v", i, err)
		}
	}
	_, err = tc.AddEntity(t.Context(), entity(t, "a", "over"), nil)
	throttled(t, err, faultproxy.PartitionBusyMessage)
	if _, err := direct.GetEntity(t.Context(), "a", "over", nil); responseError(t, err).StatusCode != http.StatusNotFound {
		t.Fatal("a refused insert reached the service")
	}
	// Reads draw on the same bucket.
	_, err = tc.GetEntity(t.Context(), "a", "0", nil)
	throttled(t, err, faultproxy.PartitionBusyMessage)
	// Another partition has its own bucket.
	if _, err := tc.AddEntity(t.Context(), entity(t, "b", "0"), nil); err != nil {
		t.Fatalf("partition b throttled by a's load: %v", err)
	}
	// 10 entities/s: 100 ms refill one token, not two.
	clock.Advance(100 * time.Millisecond)
	if _, err := tc.AddEntity(t.Context(), entity(t, "a", "later"), nil); err != nil {
		t.Fatalf("after a refill: %v", err)
	}
	_, err = tc.AddEntity(t.Context(), entity(t, "a", "again"), nil)
	throttled(t, err, faultproxy.PartitionBusyMessage)
	// Reopened after a long pause, but no more than the burst at once.
	clock.Advance(time.Hour)
	for i := range 5 {
		if _, err := tc.UpsertEntity(t.Context(), entity(t, "a", fmt.Sprint(i)), nil); err != nil {
			t.Fatalf("upsert %d after an idle hour: %v", i, err)
		}
	}
	_, err = tc.DeleteEntity(t.Context(), "a", "0", nil)
	throttled(t, err, faultproxy.PartitionBusyMessage)

	st := th.Stats()
	want := faultproxy.Counts{AdmittedRequests: 11, AdmittedEntities: 11, RefusedRequests: 4, RefusedEntities: 4}
	if st.Partitions["a"] != want {
		t.Errorf("partition a: %+v, want %+v", st.Partitions["a"], want)
	}
	if got := st.Partitions["b"]; got.AdmittedEntities != 1 || got.RefusedEntities != 0 {
		t.Errorf("partition b: %+v", got)
	}
	if st.Total.AdmittedEntities != 12 || st.Total.RefusedEntities != 4 {
		t.Errorf("total: %+v", st.Total)
	}
	// Per second: second 0 saw 7 admitted and 3 refused; second 3600 the rest.
	if len(st.Seconds) != 3601 || st.Seconds[0].AdmittedEntities != 7 || st.Seconds[0].RefusedEntities != 3 ||
		st.Seconds[3600].AdmittedEntities != 5 || st.Seconds[3600].RefusedEntities != 1 {
		t.Errorf("seconds: %d, [0] %+v, [last] %+v", len(st.Seconds), st.Seconds[0], st.Seconds[len(st.Seconds)-1])
	}
	if ps := st.PartitionSeconds["a"]; len(ps) != 3601 || ps[0].AdmittedEntities != 6 || ps[3600].RefusedEntities != 1 {
		t.Errorf("partition a per second: %d seconds", len(ps))
	}
	if n := p.CountMatching(func(r faultproxy.RequestInfo) bool { return r.Fired == faultproxy.ThrottledFired }); n != 4 {
		t.Errorf("%d requests recorded as throttled, want 4", n)
	}
	// Stopped, the model lets everything through.
	th.Stop()
	for i := range 10 {
		if _, err := tc.UpsertEntity(t.Context(), entity(t, "a", fmt.Sprint(i)), nil); err != nil {
			t.Fatalf("after Stop: %v", err)
		}
	}
}

func TestThrottleEnforcesTheAccountLimit(t *testing.T) {
	t.Parallel()
	p, tc, _ := proxiedTable(t)
	clock := newFakeClock()
	th, err := p.EmulateThrottling(&faultproxy.ThrottleOptions{PartitionRate: 100, AccountRate: 10, AccountBurst: 4, Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 4 {
		if _, err := tc.AddEntity(t.Context(), entity(t, fmt.Sprint("p", i), "r"), nil); err != nil {
			t.Fatal(err)
		}
	}
	// A fresh partition, yet the account is out of tokens.
	_, err = tc.AddEntity(t.Context(), entity(t, "fresh", "r"), nil)
	throttled(t, err, faultproxy.AccountBusyMessage)
	// A query of the whole table has no partition but draws on the account.
	pager := tc.NewListEntitiesPager(nil)
	_, err = pager.NextPage(t.Context())
	throttled(t, err, faultproxy.AccountBusyMessage)
	clock.Advance(200 * time.Millisecond) // two tokens
	for _, pk := range []string{"fresh", "p0"} {
		if _, err := tc.AddEntity(t.Context(), entity(t, pk, "r2"), nil); err != nil {
			t.Fatalf("after a refill: %v", err)
		}
	}
	_, err = tc.AddEntity(t.Context(), entity(t, "p9", "r"), nil)
	throttled(t, err, faultproxy.AccountBusyMessage)
	st := th.Stats()
	if st.Total.AdmittedEntities != 6 || st.Total.RefusedRequests != 3 {
		t.Errorf("total %+v, want 6 admitted and 3 refused", st.Total)
	}
	if st.Partitions[""].RefusedRequests != 1 {
		t.Errorf("the query without a partition: %+v", st.Partitions[""])
	}
}

// A transaction draws one token per action, each from the bucket of its own PartitionKey,
// keys with commas, parentheses and quotes included.
func TestThrottleCountsEveryActionOfATransaction(t *testing.T) {
	t.Parallel()
	p, tc, direct := proxiedTable(t)
	clock := newFakeClock()
	th, err := p.EmulateThrottling(&faultproxy.ThrottleOptions{PartitionRate: 5, PartitionBurst: 5, AccountRate: -1, Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	const pk = "dept, a=(b)"
	batch := func(pk string, from, n int) []aztables.TransactionAction {
		var out []aztables.TransactionAction
		for i := from; i < from+n; i++ {
			out = append(out, aztables.TransactionAction{ActionType: aztables.TransactionTypeAdd, Entity: entity(t, pk, fmt.Sprint(i))})
		}
		return out
	}
	if _, err := tc.SubmitTransaction(t.Context(), batch(pk, 0, 4), nil); err != nil {
		t.Fatalf("4 actions within a burst of 5: %v", err)
	}
	// One token left: a transaction of 4 is refused whole, a single insert is admitted.
	_, err = tc.SubmitTransaction(t.Context(), batch(pk, 4, 4), nil)
	throttled(t, err, faultproxy.PartitionBusyMessage)
	if _, err := direct.GetEntity(t.Context(), pk, "4", nil); err == nil {
		t.Fatal("a refused transaction reached the service")
	}
	if _, err := tc.AddEntity(t.Context(), entity(t, pk, "single"), nil); err != nil {
		t.Fatal(err)
	}
	// Updates and deletes in a transaction are counted by the key in their URL.
	clock.Advance(time.Second)
	upd := []aztables.TransactionAction{
		{ActionType: aztables.TransactionTypeUpdateMerge, Entity: entity(t, pk, "0")},
		{ActionType: aztables.TransactionTypeDelete, Entity: entity(t, pk, "1")},
	}
	if _, err := tc.SubmitTransaction(t.Context(), upd, nil); err != nil {
		t.Fatal(err)
	}
	st := th.Stats()
	want := faultproxy.Counts{AdmittedRequests: 3, AdmittedEntities: 7, RefusedRequests: 1, RefusedEntities: 4}
	if st.Partitions[pk] != want || len(st.Partitions) != 1 {
		t.Fatalf("partitions %+v, want only %q with %+v", st.Partitions, pk, want)
	}
	// Azurite commits a transaction that mixes PartitionKeys (the real service refuses
	// it): the model still charges each action to its own partition.
	mixed := append(batch("x", 0, 3), batch("y", 0, 3)...)
	if _, err := tc.SubmitTransaction(t.Context(), mixed, nil); err != nil {
		t.Fatal(err)
	}
	// A point read names its key in the URL, quotes doubled.
	if _, err := tc.GetEntity(t.Context(), "o'brien", "r", nil); responseError(t, err).StatusCode != http.StatusNotFound {
		t.Fatalf("point read: %v", err)
	}
	st = th.Stats()
	if st.Partitions["x"].AdmittedEntities != 3 || st.Partitions["y"].AdmittedEntities != 3 || st.Partitions["o'brien"].AdmittedRequests != 1 {
		t.Fatalf("mixed transaction and point read: %+v", st.Partitions)
	}
}

// The 503 carries the table service's OData error body, which the SDK parses into the
// ServerBusy code and the message.
func TestThrottleAnswersWithTheServiceBody(t *testing.T) {
	t.Parallel()
	p, _, _ := proxiedTable(t)
	if _, err := p.EmulateThrottling(&faultproxy.ThrottleOptions{PartitionRate: 1, PartitionBurst: 1, AccountRate: -1}); err != nil {
		t.Fatal(err)
	}
	send := func() *http.Response {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, p.URL()+"/devstoreaccount1/t1(PartitionKey='k',RowKey='r')", nil)
		req.Header.Set("Accept", "application/json;odata=minimalmetadata")
		req.Header.Set("DataServiceVersion", "3.0")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	_ = send().Body.Close() // the one token
	resp := send()
	defer resp.Body.Close()
	var body struct {
		Error struct {
			Code    string `json:"code"`
			Message struct {
				Lang  string `json:"lang"`
				Value string `json:"value"`
			} `json:"message"`
		} `json:"odata.error"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("x-ms-error-code") != "ServerBusy" ||
		!strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		t.Fatalf("got %d, headers %v", resp.StatusCode, resp.Header)
	}
	if body.Error.Code != "ServerBusy" || body.Error.Message.Lang != "en-US" ||
		!strings.HasPrefix(body.Error.Message.Value, faultproxy.PartitionBusyMessage+"\nRequestId:") ||
		!strings.Contains(body.Error.Message.Value, "\nTime:") {
		t.Fatalf("body %+v", body)
	}
}

func TestThrottleOptions(t *testing.T) {
	t.Parallel()
	p, err := faultproxy.New("http://127.0.0.1:1")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	th, err := p.EmulateThrottling(nil)
	if err != nil {
		t.Fatal(err)
	}
	o := th.Options()
	if o.PartitionRate != faultproxy.PartitionTarget || o.AccountRate != faultproxy.AccountTarget ||
		o.PartitionBurst != faultproxy.PartitionTarget || o.AccountBurst != faultproxy.AccountTarget {
		t.Errorf("defaults %+v", o)
	}
	for _, bad := range []faultproxy.ThrottleOptions{
		{PartitionRate: -2}, {AccountRate: -0.5}, {PartitionBurst: -1}, {AccountBurst: -3},
	} {
		if _, err := p.EmulateThrottling(&bad); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
	if _, err := p.EmulateThrottling(&faultproxy.ThrottleOptions{PartitionRate: -1, AccountRate: -1}); err != nil {
		t.Errorf("both limits off: %v", err)
	}
}

// Queue requests are neither throttled nor counted, even on a proxy with a model.
func TestThrottleLeavesQueuesAlone(t *testing.T) {
	t.Parallel()
	ps := testenv.Proxies(t)
	th, err := ps.Queue.EmulateThrottling(&faultproxy.ThrottleOptions{PartitionRate: 1, PartitionBurst: 1, AccountRate: 1, AccountBurst: 1, Now: newFakeClock().Now})
	if err != nil {
		t.Fatal(err)
	}
	name := testenv.QueueName(t)
	q := testenv.QueueServiceFrom(t, ps.ConnectionString).NewQueueClient(name)
	t.Cleanup(func() { _, _ = testenv.QueueService(t).NewQueueClient(name).Delete(context.Background(), nil) })
	if _, err := q.Create(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if _, err := q.EnqueueMessage(t.Context(), fmt.Sprint("m", i), nil); err != nil {
			t.Fatalf("enqueue %d: %v", i, err)
		}
	}
	if _, err := q.DequeueMessages(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
	if st := th.Stats(); st.Total != (faultproxy.Counts{}) {
		t.Fatalf("the model judged queue requests: %+v", st.Total)
	}
}

// PartitionOf models range partitions: neighbouring keys share one bucket.
func TestThrottleRangePartitions(t *testing.T) {
	t.Parallel()
	p, tc, _ := proxiedTable(t)
	th, err := p.EmulateThrottling(&faultproxy.ThrottleOptions{PartitionRate: 10, PartitionBurst: 2, AccountRate: -1, Now: newFakeClock().Now,
		PartitionOf: func(pk string) string { return pk[:1] }})
	if err != nil {
		t.Fatal(err)
	}
	for _, pk := range []string{"a1", "a2", "b1"} {
		if _, err := tc.AddEntity(t.Context(), entity(t, pk, "r"), nil); err != nil {
			t.Fatalf("%s: %v", pk, err)
		}
	}
	_, err = tc.AddEntity(t.Context(), entity(t, "a3", "r"), nil)
	throttled(t, err, faultproxy.PartitionBusyMessage)
	st := th.Stats()
	if st.Partitions["a"].AdmittedEntities != 2 || st.Partitions["a"].RefusedEntities != 1 || st.Partitions["b"].AdmittedEntities != 1 || len(st.Partitions) != 2 {
		t.Fatalf("partitions %+v", st.Partitions)
	}
}

// PartitionMaxInFlight counts, per partition, the requests being answered at once: two
// point reads of partition "a" held together count 2 there and none elsewhere, and a
// request answered after they ended does not raise it.
func TestThrottleCountsRequestsInFlightPerPartition(t *testing.T) {
	t.Parallel()
	p, tc, direct := proxiedTable(t)
	for _, pk := range []string{"a", "b"} {
		if _, err := direct.AddEntity(t.Context(), entity(t, pk, "1"), nil); err != nil {
			t.Fatal(err)
		}
	}
	th, err := p.EmulateThrottling(&faultproxy.ThrottleOptions{PartitionRate: -1, AccountRate: -1})
	if err != nil {
		t.Fatal(err)
	}
	// The model judges a delayed request before its delay: held reads are in flight.
	remove := p.AddRule(faultproxy.Rule{Name: "hold", Match: faultproxy.IsGetEntity, Action: faultproxy.Delay(time.Hour)})
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	for _, pk := range []string{"a", "a", "b"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _ = tc.GetEntity(ctx, pk, "1", nil)
		}()
	}
	for th.Stats().Total.AdmittedRequests < 3 {
		time.Sleep(5 * time.Millisecond) // polls the model's progress; go test -timeout bounds it
	}
	cancel()
	wg.Wait()
	remove()
	if err := p.WaitIdle(t.Context()); err != nil { // the held reads have ended at the proxy too
		t.Fatal(err)
	}
	if _, err := tc.GetEntity(t.Context(), "a", "1", nil); err != nil {
		t.Fatal(err)
	}
	st := th.Stats()
	if got := st.PartitionMaxInFlight; got["a"] != 2 || got["b"] != 1 || len(got) != 2 {
		t.Fatalf("PartitionMaxInFlight = %v, want a:2 b:1", got)
	}
}
