package queueworker

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tablepatterns/tablepatterns/internal/errs"
)

// TestRoundTrip sends typed messages through Enqueue (base64) and through azqueue directly
// in both forms, and checks what the handler receives.
func TestRoundTrip(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()

	before := time.Now().UTC().Add(-time.Second)
	enq, err := Enqueue(ctx, b.client, "order", "typed-1", item{N: 1, Note: "via Enqueue"}, nil)
	if err != nil {
		t.Fatalf("Enqueue: %v", err)
	}
	if enq.ID != "typed-1" || enq.MessageID == "" || enq.InsertionTime.IsZero() {
		t.Fatalf("Enqueue result %+v", enq)
	}
	// What Enqueue stored is base64 of the JSON envelope, as Azure Functions writes it.
	texts := b.peekAll(b.direct)
	if len(texts) != 1 {
		t.Fatalf("peek: %d messages, want 1", len(texts))
	}
	raw, err := base64.StdEncoding.DecodeString(texts[0])
	if err != nil {
		t.Fatalf("stored text is not base64: %q", texts[0])
	}
	var stored map[string]any
	if err := json.Unmarshal(raw, &stored); err != nil || stored["kind"] != "order" || stored["id"] != "typed-1" {
		t.Fatalf("stored envelope %s (%v)", raw, err)
	}

	// A raw JSON message and a base64 one, written by someone else.
	rawJSON := `{"kind":"order","id":"raw-2","payload":{"n":2,"note":"raw <&> JSON"},"enqueuedAt":"2024-01-02T03:04:05Z"}`
	if _, err := b.direct.EnqueueMessage(ctx, rawJSON, nil); err != nil {
		t.Fatal(err)
	}
	b64 := base64.StdEncoding.EncodeToString([]byte(`{"kind":"order","id":"b64-3","payload":{"n":3},"enqueuedAt":"2024-01-02T03:04:05Z"}`))
	if _, err := b.direct.EnqueueMessage(ctx, b64, nil); err != nil {
		t.Fatal(err)
	}

	var mu sync.Mutex
	got := map[string]*Message[item]{}
	reg := NewRegistry()
	MustHandle(reg, "order", func(ctx context.Context, m *Message[item]) error {
		mu.Lock()
		defer mu.Unlock()
		got[m.ID] = m
		return nil
	})
	w := b.worker(b.config(reg))
	b.drain(w)

	want := map[string]item{"typed-1": {1, "via Enqueue"}, "raw-2": {2, "raw <&> JSON"}, "b64-3": {3, ""}}
	if len(got) != len(want) {
		t.Fatalf("handled %d messages, want %d: %v", len(got), len(want), got)
	}
	for id, p := range want {
		m := got[id]
		if m == nil {
			t.Fatalf("message %s not handled", id)
		}
		if m.Payload != p || m.Kind != "order" || m.DequeueCount != 1 || m.MessageID == "" || m.InsertionTime.IsZero() {
			t.Errorf("message %s: %+v", id, m)
		}
	}
	if e := got["typed-1"].EnqueuedAt; e.Before(before) || e.After(time.Now().Add(time.Second)) {
		t.Errorf("EnqueuedAt %v not around now", e)
	}
	if e := got["raw-2"].EnqueuedAt; !e.Equal(time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)) {
		t.Errorf("EnqueuedAt of the raw message = %v", e)
	}
	if n := b.count(b.direct); n != 0 {
		t.Errorf("queue still holds %d messages", n)
	}
	if s := w.Stats(); s.Processed != 3 || s.Failed != 0 || s.InFlight != 0 {
		t.Errorf("stats %+v", s)
	}
}

// TestPoison covers the ways into the poison queue and the way back.
func TestPoison(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()

	var deliveries sync.Map // id -> *atomic.Int64
	count := func(id string) int64 {
		v, _ := deliveries.LoadOrStore(id, new(atomic.Int64))
		return v.(*atomic.Int64).Load()
	}
	var healed atomic.Bool
	reg := NewRegistry()
	MustHandle(reg, "order", func(ctx context.Context, m *Message[item]) error {
		v, _ := deliveries.LoadOrStore(m.ID, new(atomic.Int64))
		v.(*atomic.Int64).Add(1)
		switch {
		case healed.Load():
			return nil
		case m.Payload.Note == "cancel":
			return Cancel(errors.New("cannot ever work"))
		default:
			return fmt.Errorf("boom on delivery %d", m.DequeueCount)
		}
	})
	cfg := b.config(reg)
	cfg.MaxDequeueCount = DefaultMaxDequeueCount
	w := b.worker(cfg)

	if _, err := Enqueue(ctx, b.client, "order", "fails", item{N: 1}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := Enqueue(ctx, b.client, "order", "cancels", item{N: 2, Note: "cancel"}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := b.direct.EnqueueMessage(ctx, "not an envelope!", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := Enqueue(ctx, b.client, "order", "badpayload", "a string, not an item", nil); err != nil {
		t.Fatal(err)
	}
	b.drain(w)

	if n := count("fails"); n != DefaultMaxDequeueCount {
		t.Errorf("failing message delivered %d times, want exactly %d", n, DefaultMaxDequeueCount)
	}
	if n := count("cancels"); n != 1 {
		t.Errorf("cancelled message delivered %d times, want 1", n)
	}
	if n := count("badpayload"); n != 0 {
		t.Errorf("undecodable payload reached the handler %d times", n)
	}
	if n := b.count(b.direct); n != 0 {
		t.Errorf("main queue holds %d messages, want 0", n)
	}
	s := w.Stats()
	if s.Poisoned != 4 || s.Failed != DefaultMaxDequeueCount+2 || s.Retried != DefaultMaxDequeueCount-1 {
		t.Errorf("stats %+v", s)
	}

	pms, err := PeekPoison(ctx, w.PoisonQueue(), 0)
	if err != nil {
		t.Fatalf("PeekPoison: %v", err)
	}
	byID := map[string]PoisonMessage{}
	for _, pm := range pms {
		if pm.Queue != b.name || pm.OriginalMessageID == "" || pm.PoisonedAt.IsZero() {
			t.Errorf("poison record %+v", pm)
		}
		byID[pm.ID] = pm
	}
	if len(pms) != 4 {
		t.Fatalf("poison queue holds %d messages, want 4: %+v", len(pms), pms)
	}
	if pm := byID["fails"]; !strings.Contains(pm.Error, fmt.Sprintf("boom on delivery %d", DefaultMaxDequeueCount)) ||
		pm.OriginalDequeueCount != DefaultMaxDequeueCount || pm.Kind != "order" || string(pm.Payload) != `{"n":1}` {
		t.Errorf("poisoned failing message %+v", pm)
	}
	if pm := byID["cancels"]; !strings.Contains(pm.Error, "cannot ever work") || pm.OriginalDequeueCount != 1 {
		t.Errorf("poisoned cancelled message %+v", pm)
	}
	if pm := byID["badpayload"]; !strings.Contains(pm.Error, "does not decode") {
		t.Errorf("poisoned bad payload %+v", pm)
	}
	if pm := byID[""]; pm.Original != "not an envelope!" || !strings.Contains(pm.Error, "malformed") {
		t.Errorf("poisoned malformed text %+v", pm)
	}

	// Requeue after a fix: the envelopes come back with their ids, and are handled.
	healed.Store(true)
	moved, err := RequeuePoison(ctx, w.PoisonQueue(), b.client, 0)
	if err != nil || moved != 4 {
		t.Fatalf("RequeuePoison = %d, %v; want 4", moved, err)
	}
	if n := b.count(w.PoisonQueue()); n != 0 {
		t.Errorf("poison queue holds %d after requeue", n)
	}
	b.drain(w)
	if n := count("fails"); n != DefaultMaxDequeueCount+1 {
		t.Errorf("requeued message delivered %d times in all, want %d", n, DefaultMaxDequeueCount+1)
	}
	// The malformed text and the bad payload are poisoned again: they can never work.
	if pms, err := PeekPoison(ctx, w.PoisonQueue(), 32); err != nil || len(pms) != 2 {
		t.Errorf("poison queue after requeue: %d messages, %v; want 2", len(pms), err)
	}
}

// TestOversizedPayload checks the 64 KiB limit on the encoded message, before any request.
func TestOversizedPayload(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()

	// The JSON envelope's base64 must fit in 65,536 bytes: about 49,000 bytes of JSON.
	big := strings.Repeat("x", 50_000)
	_, err := Enqueue(ctx, b.client, "order", "too-big", item{Note: big}, nil)
	var inv *errs.InvalidInputError
	if !errors.Is(err, errs.ErrInvalidInput) || !errors.As(err, &inv) {
		t.Fatalf("Enqueue of %d bytes = %v, want an *errs.InvalidInputError", len(big), err)
	}
	if inv.Limit != MaxMessageSize || inv.Size <= MaxMessageSize || inv.Size != base64.StdEncoding.EncodedLen(inv.Size*3/4) {
		t.Errorf("error sizes %+v", inv)
	}
	if n := b.proxy.Count(); n != 0 {
		t.Fatalf("%d requests sent for a refused payload", n)
	}

	// The largest note that fits is accepted by the server too: the check is not stricter
	// than the service. Find it from the measured overhead.
	probe, err := encodeEnvelope(&envelope{Kind: "order", ID: "fits", Payload: json.RawMessage(`{"n":0,"note":""}`), EnqueuedAt: time.Now().UTC()}, encRaw)
	if err != nil {
		t.Fatal(err)
	}
	fit := MaxMessageSize/4*3 - len(probe) - 40 // leave room for a longer timestamp
	if _, err := Enqueue(ctx, b.client, "order", "fits", item{Note: strings.Repeat("y", fit)}, nil); err != nil {
		t.Fatalf("Enqueue of a note of %d bytes: %v", fit, err)
	}
	// And the service itself refuses what the check refuses (Azurite: 413).
	_, err = b.direct.EnqueueMessage(ctx, strings.Repeat("A", MaxMessageSize+1), nil)
	if !isResponse(err, 413, "RequestBodyTooLarge") {
		t.Errorf("service accepted a message over the limit: %v", err)
	}
	// Bad options are refused before sending too.
	before := b.proxy.Count()
	for _, o := range []*EnqueueOptions{{VisibilityDelay: -time.Second}, {VisibilityDelay: 8 * 24 * time.Hour}, {TTL: -2}, {TTL: time.Minute, VisibilityDelay: time.Hour}} {
		if _, err := Enqueue(ctx, b.client, "order", "opts", item{}, o); !errors.Is(err, errs.ErrInvalidInput) {
			t.Errorf("options %+v: %v, want ErrInvalidInput", o, err)
		}
	}
	if _, err := Enqueue(ctx, b.client, "", "nokind", item{}, nil); !errors.Is(err, errs.ErrInvalidInput) {
		t.Errorf("empty kind: %v", err)
	}
	if _, err := Enqueue(ctx, b.client, "order", "nomarshal", make(chan int), nil); !errors.Is(err, errs.ErrInvalidInput) {
		t.Errorf("unmarshalable payload: %v", err)
	}
	if n := b.proxy.Count() - before; n != 0 {
		t.Errorf("%d requests sent for refused options", n)
	}
}

// TestEnqueueOptions checks that a delayed message stays invisible and a generated id is set.
func TestEnqueueOptions(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	enq, err := Enqueue(ctx, b.client, "order", "", item{N: 7}, &EnqueueOptions{VisibilityDelay: time.Hour, TTL: -1})
	if err != nil {
		t.Fatal(err)
	}
	if len(enq.ID) != 32 {
		t.Errorf("generated id %q", enq.ID)
	}
	if !enq.ExpirationTime.IsZero() && enq.ExpirationTime.Before(time.Now().AddDate(1, 0, 0)) {
		t.Errorf("TTL -1 gave expiration %v", enq.ExpirationTime)
	}
	if got := b.peekAll(b.direct); len(got) != 0 {
		t.Errorf("delayed message visible: %v", got)
	}
	if n := b.count(b.direct); n != 1 {
		t.Errorf("count %d, want 1", n)
	}
}
