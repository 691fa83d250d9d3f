package queueworker

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"

	"github.com/tablepatterns/tablepatterns/internal/errs"
)

func TestDecodeEnvelope(t *testing.T) {
	t.Parallel()
	js := `{"kind":"k","id":"1","payload":{"a":1},"enqueuedAt":"2024-01-02T03:04:05Z"}`
	tests := []struct {
		name    string
		text    string
		enc     encoding
		wantErr bool
	}{
		{"raw", js, encRaw, false},
		{"raw with space", "  \n" + js + "\n", encRaw, false},
		{"base64", base64.StdEncoding.EncodeToString([]byte(js)), encBase64, false},
		{"base64 of spaced json", base64.StdEncoding.EncodeToString([]byte(" " + js)), encBase64, false},
		{"no kind", `{"id":"1"}`, encRaw, true},
		{"not json", `{"kind":`, encRaw, true},
		{"not base64", "hello world!", encBase64, true},
		{"base64 of garbage", base64.StdEncoding.EncodeToString([]byte("garbage")), encBase64, true},
		{"empty", "", encBase64, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env, enc, err := decodeEnvelope(tt.text)
			if tt.wantErr {
				if !errors.Is(err, errMalformed) {
					t.Fatalf("err = %v, want errMalformed", err)
				}
				return
			}
			if err != nil || enc != tt.enc || env.Kind != "k" || env.ID != "1" || string(env.Payload) != `{"a":1}` {
				t.Fatalf("got %+v, %v, %v", env, enc, err)
			}
		})
	}
}

func FuzzDecodeEnvelope(f *testing.F) {
	f.Add(`{"kind":"k","id":"1","payload":{"a":1},"enqueuedAt":"2024-01-02T03:04:05Z"}`)
	f.Add(base64.StdEncoding.EncodeToString([]byte(`{"kind":"k","payload":null}`)))
	f.Add("")
	f.Add("{")
	f.Fuzz(func(t *testing.T, text string) {
		env, enc, err := decodeEnvelope(text)
		if err != nil {
			return
		}
		// Whatever decodes re-encodes, in the same form, to an equal envelope.
		again, err := encodeEnvelope(env, enc)
		if err != nil {
			t.Fatalf("re-encode: %v", err)
		}
		env2, enc2, err := decodeEnvelope(again)
		if err != nil || enc2 != enc || env2.Kind != env.Kind || env2.ID != env.ID || !env2.EnqueuedAt.Equal(env.EnqueuedAt) || env2.Uncounted != env.Uncounted {
			t.Fatalf("round trip of %q: %+v %v %v", text, env2, enc2, err)
		}
		if canonical(t, env.Payload) != canonical(t, env2.Payload) {
			t.Fatalf("payload changed: %q -> %q", env.Payload, env2.Payload)
		}
	})
}

// canonical returns a JSON value re-marshalled, an absent one as null.
func canonical(t *testing.T, raw json.RawMessage) string {
	if len(raw) == 0 {
		return "null"
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("payload %q is not JSON: %v", raw, err)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

func TestPollBackoff(t *testing.T) {
	t.Parallel()
	for _, r := range []float64{0, 0.5, 0.999} {
		p := newPollBackoff(100*time.Millisecond, time.Second, func() float64 { return r })
		nominal := []time.Duration{100, 200, 400, 800, 1000, 1000}
		for i, n := range nominal {
			n *= time.Millisecond
			want := min(time.Duration(float64(n)*(0.8+0.4*r)), time.Second)
			if d := p.Next(); d != want {
				t.Errorf("rand %v, wait %d = %v, want %v", r, i, d, want)
			}
		}
		p.Reset()
		if d := p.Next(); d > 120*time.Millisecond {
			t.Errorf("after Reset: %v", d)
		}
	}
}

func TestRetryDelay(t *testing.T) {
	t.Parallel()
	lo, hi := func() float64 { return 0 }, func() float64 { return 1 }
	cases := []struct {
		z, zmax time.Duration
		n       int64
		rnd     func() float64
		want    time.Duration
	}{
		{0, time.Minute, 3, hi, 0},
		{time.Second, time.Minute, 1, lo, 800 * time.Millisecond},
		{time.Second, time.Minute, 1, hi, 1200 * time.Millisecond},
		{time.Second, time.Minute, 3, lo, 5600 * time.Millisecond}, // 0.8 s * 7
		{time.Second, 10 * time.Second, 10, hi, 10 * time.Second},
		{time.Second, 10 * time.Second, 1000, hi, 10 * time.Second},
	}
	for _, c := range cases {
		if got := retryDelay(c.z, c.zmax, c.n, c.rnd); got != c.want {
			t.Errorf("retryDelay(%v, %v, %d) = %v, want %v", c.z, c.zmax, c.n, got, c.want)
		}
	}
}

func TestConfigValidation(t *testing.T) {
	t.Parallel()
	q, err := azqueue.NewQueueClientWithNoCredential("http://127.0.0.1:1/acct/orders", nil)
	if err != nil {
		t.Fatal(err)
	}
	svc, err := azqueue.NewServiceClientWithNoCredential("http://127.0.0.1:1/acct", nil)
	if err != nil {
		t.Fatal(err)
	}
	reg := NewRegistry()
	MustHandle(reg, "k", func(ctx context.Context, m *Message[int]) error { return nil })
	ok := Config{Queue: q, Service: svc, Registry: reg}
	w, err := New(ok)
	if err != nil {
		t.Fatalf("New with defaults: %v", err)
	}
	c := w.cfg
	if c.BatchSize != 16 || c.Concurrency != 16 || c.VisibilityTimeout != 10*time.Minute || c.MaxDequeueCount != 5 ||
		c.RetryDelay != 0 || c.MinPollInterval != 100*time.Millisecond || c.MaxPollInterval != time.Minute || c.ShutdownTimeout != 30*time.Second {
		t.Errorf("defaults %+v", c)
	}
	if got := queueNameOf(w.PoisonQueue()); got != "orders-poison" {
		t.Errorf("poison queue %q", got)
	}
	bad := map[string]func(*Config){
		"Queue":             func(c *Config) { c.Queue = nil },
		"PoisonQueue":       func(c *Config) { c.Service = nil },
		"Registry":          func(c *Config) { c.Registry = NewRegistry() },
		"BatchSize":         func(c *Config) { c.BatchSize = 33 },
		"Concurrency":       func(c *Config) { c.Concurrency = -1 },
		"VisibilityTimeout": func(c *Config) { c.VisibilityTimeout = 500 * time.Millisecond },
		"MaxDequeueCount":   func(c *Config) { c.MaxDequeueCount = -1 },
		"RetryDelay":        func(c *Config) { c.RetryDelay = -2 },
		"MaxPollInterval":   func(c *Config) { c.MinPollInterval, c.MaxPollInterval = time.Second, time.Millisecond },
		"ShutdownTimeout":   func(c *Config) { c.ShutdownTimeout = -2 },
		"retry.Policy":      func(c *Config) { c.Retry.MaxRetries = -5 },
	}
	for field, mutate := range bad {
		cfg := ok
		mutate(&cfg)
		_, err := New(cfg)
		var inv *errs.InvalidInputError
		if !errors.As(err, &inv) || !strings.Contains(inv.Field, field) {
			t.Errorf("%s: err = %v, want an InvalidInputError naming it", field, err)
		}
	}
}

func TestHandleErrors(t *testing.T) {
	t.Parallel()
	reg := NewRegistry()
	fn := func(ctx context.Context, m *Message[int]) error { return nil }
	if err := Handle(reg, "k", fn); err != nil {
		t.Fatal(err)
	}
	for name, err := range map[string]error{
		"duplicate": Handle(reg, "k", fn),
		"empty":     Handle(reg, "", fn),
		"nil fn":    Handle[int](reg, "x", nil),
		"nil reg":   Handle(nil, "x", fn),
	} {
		if !errors.Is(err, errs.ErrInvalidInput) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestPoisonTextFallback(t *testing.T) {
	t.Parallel()
	env := &envelope{Kind: "k", ID: "big", Payload: json.RawMessage(`"` + strings.Repeat("x", 49_000) + `"`)}
	original, _ := encodeEnvelope(env, encBase64)
	if len(original) > MaxMessageSize {
		t.Fatalf("test message too big: %d", len(original))
	}
	text := poisonText("q", "m1", original, env, 5, errors.New("boom"))
	if text != original {
		t.Errorf("a record that does not fit must fall back to the original text")
	}
	pm := parsePoison(text)
	if pm.ID != "big" || pm.Original != original {
		t.Errorf("parsed fallback %+v", pm.ID)
	}
	small := &envelope{Kind: "k", ID: "small", Payload: json.RawMessage(`1`), Uncounted: 2}
	text = poisonText("q", "m2", "x", small, 5, errors.New(strings.Repeat("e", 20_000)))
	pm = parsePoison(text)
	if pm.ID != "small" || len(pm.Error) > maxPoisonError+20 || pm.OriginalDequeueCount != 5 {
		t.Errorf("parsed record %+v", pm)
	}
	back, _, err := decodeEnvelope(pm.Original)
	if err != nil || back.Uncounted != 0 || back.ID != "small" {
		t.Errorf("requeue text %q: %+v %v", pm.Original, back, err)
	}
}
