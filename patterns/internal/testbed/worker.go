package testbed

import (
	"encoding/base64"
	"encoding/json"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"

	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
	"github.com/tablepatterns/tablepatterns/queueworker"
)

// Worker returns a queueworker.Worker on q's queue (through the bed's Clients) with the
// handlers that register adds, polling every few milliseconds, with FastRetry and a
// visibility timeout of 30 s. It fails the test on an error. Run it with Drain.
func (b *Bed) Worker(q *queueworker.Client, register ...func(*queueworker.Registry) error) *queueworker.Worker {
	b.T.Helper()
	reg := queueworker.NewRegistry()
	for _, r := range register {
		if err := r(reg); err != nil {
			b.T.Fatal(err)
		}
	}
	w, err := queueworker.New(queueworker.Config{
		Queue: q.Queue(), Service: b.Clients.Queues, Registry: reg,
		VisibilityTimeout: 30 * time.Second, MinPollInterval: 10 * time.Millisecond, MaxPollInterval: 200 * time.Millisecond,
		ShutdownTimeout: 10 * time.Second, Retry: FastRetry(),
	})
	if err != nil {
		b.T.Fatal(err)
	}
	return w
}

// Envelope is one message taken from a queue by TakeMessages, decoded as the worker
// decodes it.
type Envelope struct {
	Kind, ID   string
	Payload    json.RawMessage
	EnqueuedAt time.Time
}

// TakeMessages dequeues every message of q, deletes it, and returns them decoded: the way
// a test plays the worker's deliveries itself (duplicated, reordered, replayed).
func (b *Bed) TakeMessages(q *queueworker.Client) []Envelope {
	b.T.Helper()
	var out []Envelope
	n := int32(32)
	for {
		resp, err := q.Queue().DequeueMessages(b.Ctx, &azqueue.DequeueMessagesOptions{NumberOfMessages: &n})
		if err != nil {
			b.T.Fatal(err)
		}
		if len(resp.Messages) == 0 {
			return out
		}
		for _, m := range resp.Messages {
			raw, err := base64.StdEncoding.DecodeString(*m.MessageText)
			if err != nil {
				b.T.Fatal(err)
			}
			var env Envelope
			if err := json.Unmarshal(raw, &env); err != nil {
				b.T.Fatal(err)
			}
			out = append(out, env)
			if _, err := q.Queue().DeleteMessage(b.Ctx, *m.MessageID, *m.PopReceipt, nil); err != nil {
				b.T.Fatal(err)
			}
		}
	}
}

// WaitHeld waits until ps holds its request (a fault proxy pause): the step of a window
// test between arming a pause and running the competing operation. A request that never
// arrives hangs the test until go test -timeout, whose goroutine dump shows the wait: a
// fixed deadline is one a loaded machine can miss.
func WaitHeld(t testing.TB, ps *faultproxy.Pause) {
	t.Helper()
	if err := ps.Wait(t.Context()); err != nil {
		t.Fatalf("%s: the request never arrived: %v", ps.Name(), err)
	}
}
