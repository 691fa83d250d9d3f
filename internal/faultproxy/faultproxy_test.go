package faultproxy_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"

	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
	"github.com/tablepatterns/tablepatterns/internal/testenv"
)

// The proxy's emulations are built for Azurite (EmulatePaging forges its continuation
// tokens), so its tests always run on one, whatever account the other packages use.
func TestMain(m *testing.M) { testenv.MainAzurite(m) }

// tableProxy starts a proxy in front of the table service and returns it with a service
// client that goes through it.
func tableProxy(t *testing.T) (*faultproxy.Proxy, *aztables.ServiceClient) {
	t.Helper()
	s := testenv.Server(t)
	u, err := url.Parse(s.TableURL)
	if err != nil {
		t.Fatal(err)
	}
	p, err := faultproxy.New(u.Scheme + "://" + u.Host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p, testenv.TableServiceFrom(t, s.ConnectionStringWith(p.URL()+u.Path, "", ""))
}

// proxiedTable creates a table directly and returns a client for it through a new proxy,
// and the direct client.
func proxiedTable(t *testing.T) (p *faultproxy.Proxy, viaProxy, direct *aztables.Client) {
	t.Helper()
	name := testenv.TableName(t)
	direct = testenv.Table(t, name)
	p, svc := tableProxy(t)
	return p, svc.NewClient(name), direct
}

func entity(t testing.TB, pk, rk string) []byte {
	t.Helper()
	b, err := json.Marshal(map[string]any{"PartitionKey": pk, "RowKey": rk, "Value": 1})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func responseError(t *testing.T, err error) *azcore.ResponseError {
	t.Helper()
	var re *azcore.ResponseError
	if !errors.As(err, &re) {
		t.Fatalf("err = %v (%T), want *azcore.ResponseError", err, err)
	}
	return re
}

func TestRespondServerBusyTable(t *testing.T) {
	t.Parallel()
	p, tc, direct := proxiedTable(t)
	p.AddRule(faultproxy.Rule{Name: "busy", Match: faultproxy.IsInsertEntity, Times: 1, Action: faultproxy.Respond(http.StatusServiceUnavailable, "ServerBusy")})

	_, err := tc.AddEntity(t.Context(), entity(t, "p", "r"), nil)
	re := responseError(t, err)
	if re.StatusCode != http.StatusServiceUnavailable || re.ErrorCode != "ServerBusy" {
		t.Fatalf("got %d %q, want 503 ServerBusy", re.StatusCode, re.ErrorCode)
	}
	if _, err := direct.GetEntity(t.Context(), "p", "r", nil); responseError(t, err).StatusCode != http.StatusNotFound {
		t.Fatalf("a responded request reached the service")
	}
	// Times: 1, so the next insert goes through.
	if _, err := tc.AddEntity(t.Context(), entity(t, "p", "r"), nil); err != nil {
		t.Fatal(err)
	}
	reqs := p.Requests()
	if len(reqs) != 2 || reqs[0].Fired != "busy" || reqs[1].Fired != "" || reqs[0].Method != http.MethodPost {
		t.Fatalf("requests = %+v", reqs)
	}
	if p.Fired("busy") != 1 {
		t.Errorf("Fired(busy) = %d", p.Fired("busy"))
	}
}

func TestRespondServerBusyQueueIsXML(t *testing.T) {
	t.Parallel()
	ps := testenv.Proxies(t)
	name := testenv.QueueName(t)
	q := testenv.QueueServiceFrom(t, ps.ConnectionString).NewQueueClient(name)
	if _, err := q.Create(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = testenv.QueueService(t).NewQueueClient(name).Delete(context.Background(), nil) })
	ps.Queue.AddRule(faultproxy.Rule{Match: faultproxy.IsEnqueue, Action: faultproxy.Respond(http.StatusServiceUnavailable, "ServerBusy")})
	_, err := q.EnqueueMessage(t.Context(), "hello", nil)
	re := responseError(t, err)
	if re.StatusCode != http.StatusServiceUnavailable || re.ErrorCode != "ServerBusy" {
		t.Fatalf("got %d %q, want 503 ServerBusy", re.StatusCode, re.ErrorCode)
	}
}

func TestDropAfterForwardStoresTheEntity(t *testing.T) {
	t.Parallel()
	p, tc, direct := proxiedTable(t)
	p.AddRule(faultproxy.Rule{Name: "lost", Match: faultproxy.IsInsertEntity, Times: 1, Action: faultproxy.DropAfterForward()})

	_, err := tc.AddEntity(t.Context(), entity(t, "p", "r"), nil)
	if err == nil {
		t.Fatal("insert with a dropped response succeeded")
	}
	var re *azcore.ResponseError
	if errors.As(err, &re) {
		t.Fatalf("got a response (%v), want a transport error", err)
	}
	if _, err := direct.GetEntity(t.Context(), "p", "r", nil); err != nil {
		t.Fatalf("entity not stored: %v", err)
	}
	// The naive retry of a lost insert meets its own write.
	_, err = tc.AddEntity(t.Context(), entity(t, "p", "r"), nil)
	if re := responseError(t, err); re.StatusCode != http.StatusConflict {
		t.Fatalf("retry: %v, want 409", err)
	}
}

func TestDropBeforeForwardSendsNothing(t *testing.T) {
	t.Parallel()
	p, tc, direct := proxiedTable(t)
	p.AddRule(faultproxy.Rule{Name: "drop", Match: faultproxy.IsInsertEntity, Action: faultproxy.DropBeforeForward()})

	if _, err := tc.AddEntity(t.Context(), entity(t, "p", "r"), nil); err == nil {
		t.Fatal("dropped insert succeeded")
	}
	if _, err := direct.GetEntity(t.Context(), "p", "r", nil); responseError(t, err).StatusCode != http.StatusNotFound {
		t.Fatal("a dropped request reached the service")
	}
	if got := p.Count(); got != 1 {
		t.Errorf("Count = %d, want 1", got)
	}
}

func TestDelay(t *testing.T) {
	t.Parallel()
	p, tc, _ := proxiedTable(t)
	const d = 300 * time.Millisecond
	p.AddRule(faultproxy.Rule{Match: faultproxy.IsInsertEntity, Action: faultproxy.Delay(d)})

	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	if _, err := tc.AddEntity(ctx, entity(t, "p", "timeout"), nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want deadline exceeded", err)
	}
	start := time.Now()
	if _, err := tc.AddEntity(t.Context(), entity(t, "p", "slow"), nil); err != nil {
		t.Fatal(err)
	}
	if el := time.Since(start); el < d {
		t.Errorf("delayed insert took %v, want >= %v", el, d)
	}
}

func TestTimesLimitsFiring(t *testing.T) {
	t.Parallel()
	p, tc, _ := proxiedTable(t)
	p.AddRule(faultproxy.Rule{Name: "three", Match: faultproxy.IsInsertEntity, Times: 3, Action: faultproxy.Respond(500, "InternalError")})
	failed := 0
	for i := range 10 {
		if _, err := tc.AddEntity(t.Context(), entity(t, "p", fmt.Sprint(i)), nil); err != nil {
			if responseError(t, err).ErrorCode != "InternalError" {
				t.Fatal(err)
			}
			failed++
		}
	}
	if failed != 3 || p.Fired("three") != 3 {
		t.Fatalf("failed %d, fired %d; want 3", failed, p.Fired("three"))
	}
}

func TestProbabilityIsSeededAndReproducible(t *testing.T) {
	t.Parallel()
	p, tc, _ := proxiedTable(t)
	const seed, prob, n = 42, 0.3, 60
	p.SetSeed(seed)
	p.AddRule(faultproxy.Rule{Name: "flaky", Match: faultproxy.IsGetEntity, Probability: prob, Action: faultproxy.Respond(503, "ServerBusy")})
	// A rule that never matches must not consume draws.
	p.AddRule(faultproxy.Rule{Name: "never", Match: faultproxy.IsBatch, Probability: prob, Action: faultproxy.DropBeforeForward()})

	want := 0
	rng := rand.New(rand.NewSource(seed))
	var got []bool
	for range n {
		fire := rng.Float64() < prob
		got = append(got, fire)
		if fire {
			want++
		}
	}
	for i := range n {
		_, err := tc.GetEntity(t.Context(), "p", "absent", nil)
		code := responseError(t, err).StatusCode
		if fired := code == http.StatusServiceUnavailable; fired != got[i] {
			t.Fatalf("request %d: status %d, want fired=%v", i, code, got[i])
		}
	}
	if p.Fired("flaky") != want || want == 0 || want == n {
		t.Fatalf("fired %d, want %d (of %d)", p.Fired("flaky"), want, n)
	}
}

func TestFirstFiringRuleWinsAndRemove(t *testing.T) {
	t.Parallel()
	p, tc, _ := proxiedTable(t)
	remove := p.AddRule(faultproxy.Rule{Name: "first", Match: faultproxy.IsGetEntity, Times: 1, Action: faultproxy.Respond(503, "ServerBusy")})
	p.AddRule(faultproxy.Rule{Name: "second", Match: faultproxy.IsGetEntity, Action: faultproxy.Respond(500, "InternalError")})

	for _, want := range []string{"ServerBusy", "InternalError"} {
		_, err := tc.GetEntity(t.Context(), "p", "r", nil)
		if got := responseError(t, err).ErrorCode; got != want {
			t.Fatalf("code %q, want %q", got, want)
		}
	}
	remove()
	remove()
	p.ClearRules()
	_, err := tc.GetEntity(t.Context(), "p", "r", nil)
	if got := responseError(t, err).ErrorCode; got != "ResourceNotFound" {
		t.Fatalf("after ClearRules: %q", got)
	}
}

func TestCountingAndReset(t *testing.T) {
	t.Parallel()
	p, tc, _ := proxiedTable(t)
	if _, err := tc.AddEntity(t.Context(), entity(t, "p", "r"), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := tc.GetEntity(t.Context(), "p", "r", nil); err != nil {
		t.Fatal(err)
	}
	pager := tc.NewListEntitiesPager(nil)
	for pager.More() {
		if _, err := pager.NextPage(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	reqs := p.Requests()
	if len(reqs) != 3 || p.Count() != 3 {
		t.Fatalf("requests = %+v", reqs)
	}
	wantMethods := []string{http.MethodPost, http.MethodGet, http.MethodGet}
	for i, r := range reqs {
		if r.Method != wantMethods[i] || r.Fired != "" {
			t.Errorf("request %d = %+v", i, r)
		}
	}
	if got := reqs[1].Path; !strings.HasSuffix(got, "(PartitionKey='p',RowKey='r')") {
		t.Errorf("path %q", got)
	}
	if n := p.CountMatching(func(r faultproxy.RequestInfo) bool { return r.Method == http.MethodGet }); n != 2 {
		t.Errorf("CountMatching(GET) = %d", n)
	}
	p.Reset()
	if p.Count() != 0 || len(p.Requests()) != 0 {
		t.Fatal("Reset kept requests")
	}
}

func TestConcurrentRequestsCountedOnceEach(t *testing.T) {
	t.Parallel()
	p, tc, _ := proxiedTable(t)
	p.AddRule(faultproxy.Rule{Name: "five", Match: faultproxy.IsInsertEntity, Times: 5, Action: faultproxy.Respond(503, "ServerBusy")})
	var wg sync.WaitGroup
	var mu sync.Mutex
	failed := 0
	for i := range 40 {
		e := entity(t, "p", fmt.Sprint(i))
		wg.Go(func() {
			if _, err := tc.AddEntity(context.Background(), e, nil); err != nil {
				mu.Lock()
				failed++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if failed != 5 || p.Count() != 40 {
		t.Fatalf("failed %d of %d, want 5 of 40", failed, p.Count())
	}
}

func TestEmulateTableBeingDeleted(t *testing.T) {
	t.Parallel()
	p, svc := tableProxy(t)
	// The re-creates must be refused when their answers come back within the window of
	// the delete (the proxy judged them inside it). On a machine so loaded that they come
	// back later, that proves nothing either way: the cycle runs again on a fresh name with
	// a window twice as long, so that load lengthens the test instead of failing it.
	var name, other string
	var window time.Duration
	var deleted, deleteDone time.Time
	for window = 500 * time.Millisecond; ; window *= 2 {
		p.EmulateTableBeingDeleted(window)
		name, other = testenv.TableName(t), testenv.TableName(t)
		for _, n := range []string{name, other} {
			t.Cleanup(func() { _, _ = testenv.TableService(t).DeleteTable(context.Background(), n, nil) })
		}
		for _, n := range []string{name, other} {
			if _, err := svc.CreateTable(t.Context(), n, nil); err != nil {
				t.Fatal(err)
			}
		}
		deleted = time.Now() // before the proxy notes the delete, so the window ends after deleted+window
		if _, err := svc.DeleteTable(t.Context(), name, nil); err != nil {
			t.Fatal(err)
		}
		deleteDone = time.Now() // after it: the window ends by deleteDone+window
		judged := true
		// Table names are case-insensitive.
		for _, n := range []string{name, strings.ToUpper(name)} {
			_, err := svc.CreateTable(t.Context(), n, nil)
			if time.Since(deleted) >= window {
				judged = false // answered too late to tell
				break
			}
			if re := responseError(t, err); re.StatusCode != http.StatusConflict || re.ErrorCode != "TableBeingDeleted" {
				t.Fatalf("re-create of %s inside the window: %d %q, want 409 TableBeingDeleted", n, re.StatusCode, re.ErrorCode)
			}
		}
		if judged {
			break
		}
		t.Logf("the re-creates came back after the %v window: again with %v", window, 2*window)
	}
	// A failed delete starts no window; other tables are not affected.
	if _, err := svc.DeleteTable(t.Context(), other+"x", nil); err == nil {
		t.Fatal("deleting a missing table succeeded")
	}
	if _, err := svc.CreateTable(t.Context(), other+"x", nil); err != nil {
		t.Fatalf("create of a name whose delete failed: %v", err)
	}
	t.Cleanup(func() { _, _ = testenv.TableService(t).DeleteTable(context.Background(), other+"x", nil) })

	// After the window the create goes through: a create sent a whole window after the
	// delete returned must not be refused, however long it then took to answer.
	for {
		sent := time.Now()
		_, err := svc.CreateTable(t.Context(), name, nil)
		if err == nil {
			break
		}
		if re := responseError(t, err); re.ErrorCode != "TableBeingDeleted" {
			t.Fatalf("create after the window: %v", err)
		}
		if d := sent.Sub(deleteDone); d >= window {
			t.Fatalf("a create sent %v after the delete returned was refused TableBeingDeleted: the %v window did not end", d, window)
		}
		select {
		case <-time.After(50 * time.Millisecond):
		case <-t.Context().Done():
			t.Fatal(t.Context().Err())
		}
	}
	if time.Since(deleted) < window {
		t.Fatalf("created again after %v, inside the %v window", time.Since(deleted), window)
	}
	if n := p.CountMatching(func(r faultproxy.RequestInfo) bool { return r.Fired == "TableBeingDeleted" }); n < 2 {
		t.Errorf("%d requests marked TableBeingDeleted", n)
	}
}
