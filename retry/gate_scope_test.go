package retry

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
)

// The texts of the table service's 503 ServerBusy answers ("Common REST API error codes";
// the partition server's own one from "Scalability and performance targets").
const (
	busyPartitionMessage = "The server is busy."
	accountLimitMessage  = "Operations per second is over the account limit."
)

// barrierTransport answers every request with answer, but only once n requests have
// arrived: they all pass the Gate before any answer teaches it anything.
type barrierTransport struct {
	n      int
	answer func(*http.Request) *http.Response
	mu     sync.Mutex
	seen   int
	all    chan struct{}
}

func newBarrier(n int, answer func(*http.Request) *http.Response) *barrierTransport {
	return &barrierTransport{n: n, answer: answer, all: make(chan struct{})}
}

func (b *barrierTransport) Do(r *http.Request) (*http.Response, error) {
	b.mu.Lock()
	if b.seen++; b.seen == b.n {
		close(b.all)
	}
	b.mu.Unlock()
	select {
	case <-b.all:
	case <-r.Context().Done():
		return nil, r.Context().Err()
	}
	return b.answer(r), nil
}

// serverBusy is the table service's 503 with the message text, in its JSON error body.
func serverBusy(r *http.Request, text string) *http.Response {
	body := fmt.Sprintf(`{"odata.error":{"code":"ServerBusy","message":{"lang":"en-US","value":"%s\nRequestId:00000000-0000-4000-8000-000000000001\nTime:2026-11-28T03:00:00.0000000Z"}}}`, text)
	h := http.Header{}
	h.Set("Content-Type", "application/json;odata=minimalmetadata;streaming=true;charset=utf-8")
	h.Set("x-ms-error-code", "ServerBusy")
	return &http.Response{StatusCode: http.StatusServiceUnavailable, Header: h, Body: io.NopCloser(strings.NewReader(body)), Request: r}
}

func accepted(r *http.Request) *http.Response {
	return &http.Response{StatusCode: http.StatusOK, Header: http.Header{}, Body: io.NopCloser(strings.NewReader("{}")), Request: r}
}

// entityURL is the URL of a point read in partition pk.
func entityURL(pk string) string {
	return "https://acct.table.core.windows.net/emps(PartitionKey='" + pk + "',RowKey='1')"
}

// inPartition is a context marked with partition pk, as Schedule marks its tasks'.
func inPartition(t *testing.T, pk string) context.Context { return WithPartition(t.Context(), pk) }

// sendThrough sends n requests to url at once through a pipeline whose only policy is g,
// each answered by answer once all n have passed the Gate.
func sendThrough(t *testing.T, g *Gate, ctx context.Context, n int, method, url string, answer func(*http.Request) *http.Response) {
	t.Helper()
	pl := runtime.NewPipeline("gatetest", "v0", runtime.PipelineOptions{PerRetry: []policy.Policy{g}},
		&policy.ClientOptions{Transport: newBarrier(n, answer), Retry: policy.RetryOptions{MaxRetries: -1}})
	var wg sync.WaitGroup
	errc := make(chan error, n)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, err := runtime.NewRequest(ctx, method, url)
			if err != nil {
				errc <- err
				return
			}
			resp, err := pl.Do(req)
			if err != nil {
				errc <- err
				return
			}
			_ = resp.Body.Close()
		}()
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
}

// A busy partition ("The server is busy.") slows that partition only: after eight of its
// requests (marked with it, as Schedule marks them) were refused at once, the client as a
// whole is not limited, and a request to another partition is not held.
func TestGateThrottledPartitionLeavesTheClientUnlimited(t *testing.T) {
	c := &fakeClock{t: time.Unix(1e9, 0)}
	g := gateAt(t, c)
	sendThrough(t, g, inPartition(t, "hot"), 8, http.MethodGet, entityURL("hot"), func(r *http.Request) *http.Response { return serverBusy(r, busyPartitionMessage) })
	if r := g.Rate(); r != 0 {
		t.Fatalf("client limited to %.1f requests/s by one busy partition, want no client limit", r)
	}
	if d := g.reserve(); d != 0 {
		t.Fatalf("a request to another partition waited %v", d)
	}
}

// The busy partition gets a rate of its own, cut from what it accepted; the other
// partitions have none.
func TestGateLimitsTheBusyPartitionAlone(t *testing.T) {
	c := &fakeClock{t: time.Unix(1e9, 0)}
	g := gateAt(t, c)
	sendThrough(t, g, inPartition(t, "hot"), 2, http.MethodGet, entityURL("hot"), accepted)
	sendThrough(t, g, inPartition(t, "hot"), 2, http.MethodGet, entityURL("hot"), func(r *http.Request) *http.Response { return serverBusy(r, busyPartitionMessage) })
	if r := g.PartitionRate("hot"); r <= 0 || r > 2 {
		t.Fatalf("hot partition's rate %v, want a limit of 0.9 x its 2 accepted requests in the first second", r)
	}
	if r := g.PartitionRate("cold"); r != 0 {
		t.Fatalf("cold partition limited to %v", r)
	}
}

// "Operations per second is over the account limit." slows the whole client, as any
// throttled answer did before scopes: the partition of the request is not to blame.
func TestGateAccountLimitSlowsTheClient(t *testing.T) {
	c := &fakeClock{t: time.Unix(1e9, 0)}
	g := gateAt(t, c)
	sendThrough(t, g, inPartition(t, "p1"), 8, http.MethodGet, entityURL("p1"), func(r *http.Request) *http.Response { return serverBusy(r, accountLimitMessage) })
	if g.Rate() == 0 {
		t.Fatal("the account's limit did not limit the client")
	}
	if r := g.PartitionRate("p1"); r != 0 {
		t.Fatalf("the account's limit limited the request's partition to %v", r)
	}
}

// An unmarked request's busy partition slows the whole client: its partition's rate
// could not be learnt (its requests in flight are not bounded per partition).
func TestGateJudgesUnmarkedRequestsAtTheClientScope(t *testing.T) {
	c := &fakeClock{t: time.Unix(1e9, 0)}
	g := gateAt(t, c)
	sendThrough(t, g, t.Context(), 8, http.MethodPost, "https://acct.table.core.windows.net/$batch", func(r *http.Request) *http.Response { return serverBusy(r, busyPartitionMessage) })
	if g.Rate() == 0 || len(g.parts) != 0 {
		t.Fatalf("client rate %v, %d partitions tracked: want the client limited", g.Rate(), len(g.parts))
	}
}

// The Gate reads the start of a 503's body to classify it; the caller still reads the
// whole body as the service sent it (the Azure SDK parses the error from it).
func TestGateLeavesTheThrottledBodyWhole(t *testing.T) {
	g := mustGate(t, nil)
	pl := runtime.NewPipeline("gatetest", "v0", runtime.PipelineOptions{PerRetry: []policy.Policy{g}},
		&policy.ClientOptions{Transport: newBarrier(1, func(r *http.Request) *http.Response { return serverBusy(r, busyPartitionMessage) }), Retry: policy.RetryOptions{MaxRetries: -1}})
	req, err := runtime.NewRequest(t.Context(), http.MethodGet, entityURL("p"))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := pl.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := io.ReadAll(serverBusy(nil, busyPartitionMessage).Body)
	if string(body) != string(want) {
		t.Fatalf("body after the Gate:\n%s\nwant\n%s", body, want)
	}
}

func TestThrottleScopeReadsCodeAndMessage(t *testing.T) {
	for _, c := range []struct {
		status        int
		code, message string
		want          Scope
	}{
		{503, "ServerBusy", "The server is busy.\nRequestId:x\nTime:y", ScopePartition},
		{503, "", "the server is busy.", ScopePartition},
		{503, "ServerBusy", "Operations per second is over the account limit.\nRequestId:x", ScopeAccount},
		{503, "ServerBusy", "Ingress is over the account limit.", ScopeAccount},
		{503, "ServerBusy", "Egress is over the account limit.", ScopeAccount},
		{503, "ServerBusy", "The server is currently unable to receive requests. Please retry your request.", ScopeAccount},
		{503, "ServerBusy", "", ScopeAccount},
		{503, "OperationTimedOut", "The server is busy.", ScopeAccount}, // not the partition's own answer
		{429, "", "", ScopeAccount},
		{500, "ServerBusy", "The server is busy.", ScopeNone},
		{200, "", "", ScopeNone},
		{404, "ResourceNotFound", "", ScopeNone},
	} {
		if got := ThrottleScope(c.status, c.code, c.message); got != c.want {
			t.Errorf("ThrottleScope(%d, %q, %q) = %v, want %v", c.status, c.code, c.message, got, c.want)
		}
	}
}

func TestErrorBodyReadsJSONAndXML(t *testing.T) {
	for _, c := range []struct{ body, code, message string }{
		{`{"odata.error":{"code":"ServerBusy","message":{"lang":"en-US","value":"The server is busy."}}}`, "ServerBusy", "The server is busy."},
		{`<?xml version="1.0" encoding="utf-8"?><Error><Code>ServerBusy</Code><Message>Operations per second is over the account limit.</Message></Error>`, "ServerBusy", "Operations per second is over the account limit."},
		{`The server is busy.`, "", "The server is busy."},
	} {
		code, message := errorBody([]byte(c.body))
		if code != c.code || message != c.message {
			t.Errorf("errorBody(%q) = %q, %q; want %q, %q", c.body, code, message, c.code, c.message)
		}
	}
}

// The Gate tracks at most maxPartitions partitions; idle ones make room, and beyond the
// bound a new partition is judged at the client's scope.
func TestGateBoundsThePartitionsItTracks(t *testing.T) {
	c := &fakeClock{t: time.Unix(1e9, 0)}
	g := gateAt(t, c)
	for i := range maxPartitions {
		if g.partition(fmt.Sprint(i)) == nil {
			t.Fatalf("partition %d not tracked", i)
		}
	}
	if g.partition("one more") != nil {
		t.Fatal("a partition beyond the bound was tracked")
	}
	c.add(g.quiet + 3*time.Second)
	if g.partition("one more") == nil || len(g.parts) != 1 {
		t.Fatalf("idle partitions were not dropped: %d tracked", len(g.parts))
	}
}
