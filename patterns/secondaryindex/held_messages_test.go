package secondaryindex_test

// The Inter tests' way past SafetyDelay: the messages an Inter enqueues invisible (the
// safety message of each write, the Before of an archive move) are recorded as the queue
// answers them, and made visible once the writes they cover have returned, which is
// what the delay passing guarantees, instead of waiting the delay out. The writes still
// run with the tests' SafetyDelay and its SafetyDelay/2 bound, and the messages are
// enqueued invisible on the wire as in production.

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"

	"github.com/tablepatterns/tablepatterns/internal/testenv"
	"github.com/tablepatterns/tablepatterns/patterns/internal/testbed"
	"github.com/tablepatterns/tablepatterns/queueworker"
	"github.com/tablepatterns/tablepatterns/repo/account"
)

// heldMessages is a per-call policy of a queue client that records every message the
// queue accepted with a visibility timeout (a VisibilityDelay), with the pop receipt the
// queue answered: what Update Message needs to make it visible.
type heldMessages struct {
	mu   sync.Mutex
	msgs []heldMessage
}

type heldMessage struct{ id, popReceipt, text string }

// Do records the answer of an enqueue sent with a visibility timeout above 0.
func (h *heldMessages) Do(req *policy.Request) (*http.Response, error) {
	r := req.Raw()
	vis := r.URL.Query().Get("visibilitytimeout")
	if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/messages") || vis == "" || vis == "0" {
		return req.Next()
	}
	var sent struct {
		Text string `xml:"MessageText"`
	}
	if body := req.Body(); body != nil {
		raw, err := io.ReadAll(body)
		if err != nil {
			return nil, err
		}
		if err := req.RewindBody(); err != nil {
			return nil, err
		}
		if err := xml.Unmarshal(raw, &sent); err != nil {
			return nil, err
		}
	}
	resp, err := req.Next()
	if err != nil || resp.StatusCode != http.StatusCreated {
		return resp, err
	}
	raw, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(raw))
	var got struct {
		Messages []struct {
			ID         string `xml:"MessageId"`
			PopReceipt string `xml:"PopReceipt"`
		} `xml:"QueueMessage"`
	}
	if err := xml.Unmarshal(raw, &got); err != nil {
		return nil, err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, m := range got.Messages {
		h.msgs = append(h.msgs, heldMessage{id: m.ID, popReceipt: m.PopReceipt, text: sent.Text})
	}
	return resp, nil
}

// take returns the recorded messages and forgets them.
func (h *heldMessages) take() []heldMessage {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := h.msgs
	h.msgs = nil
	return out
}

// safetyQueue is Queue (a fresh queue, through the bed's Clients) whose client records
// the messages enqueued invisible, for drainAfterSafety.
func (b *bed) safetyQueue(t *testing.T) (*queueworker.Client, string) {
	t.Helper()
	_, name := b.Queue() // creates the queue and its cleanup
	conn := testenv.ConnectionString(t)
	if b.Proxies != nil {
		conn = b.Proxies.ConnectionString
	}
	b.held = &heldMessages{}
	clients, err := account.NewClients(conn, &account.ClientOptions{Azure: policy.ClientOptions{PerCallPolicies: []policy.Policy{b.held}}})
	if err != nil {
		t.Fatal(err)
	}
	q, err := queueworker.NewClient(clients.Queues.NewQueueClient(name), &queueworker.ClientOptions{Retry: testbed.FastRetry()})
	if err != nil {
		t.Fatal(err)
	}
	b.heldQueue = name
	return q, name
}

// drainAfterSafety makes every message enqueued invisible through the safetyQueue so far
// visible now (directly, bypassing the proxies), as SafetyDelay passing would, and runs w
// until its queue is empty. Call it only once every write whose message it reveals has
// returned: that a message runs after its write ended is what the delay guarantees.
func (b *bed) drainAfterSafety(t *testing.T, w *queueworker.Worker) {
	t.Helper()
	if b.held == nil {
		t.Fatal("drainAfterSafety without a safetyQueue")
	}
	q := b.Direct.Queues.NewQueueClient(b.heldQueue)
	zero := int32(0)
	for _, m := range b.held.take() {
		_, err := q.UpdateMessage(b.Ctx, m.id, m.popReceipt, m.text, &azqueue.UpdateMessageOptions{VisibilityTimeout: &zero})
		var re *azcore.ResponseError
		if errors.As(err, &re) && (re.ErrorCode == "MessageNotFound" || re.ErrorCode == "PopReceiptMismatch") {
			continue // the delay passed by itself: it was delivered already
		}
		if err != nil {
			t.Fatalf("make a held message visible: %v", err)
		}
	}
	testbed.Drain(t, w)
}
