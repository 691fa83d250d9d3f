package queueworker

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"encoding/json"
	"io"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
)

// A handler that fails with a transport error (a mistyped host, https against an http
// endpoint) carries the request URL, SAS query included: neither the worker's log lines nor
// the poison record may repeat it.
func TestHandlerErrorsAreRedactedInLogsAndPoisonRecords(t *testing.T) {
	t.Parallel()
	b := setup(t)
	core, logs := observer.New(zap.DebugLevel)
	const secret = "U0VDUkVUU0lH"
	reg := NewRegistry()
	MustHandle(reg, "copy", func(ctx context.Context, m *Message[item]) error {
		raw := &url.Error{Op: "Put", URL: "https://acct.blob.core.windows.net/c/b?sv=2022-11-02&se=2099-01-01&sp=rw&sig=" + secret, Err: context.DeadlineExceeded}
		return fmt.Errorf("copy: %w", raw) // a raw transport error, as a handler may return it
	})
	cfg := b.config(reg)
	cfg.MaxDequeueCount = 2
	cfg.Logger = zap.New(core)
	w := b.worker(cfg)
	if _, err := Enqueue(context.Background(), b.client, "copy", "m1", item{N: 1}, nil); err != nil {
		t.Fatal(err)
	}
	b.drain(w)
	recs, err := PeekPoison(context.Background(), b.dsvc.NewQueueClient(b.name+PoisonSuffix), 32)
	if err != nil || len(recs) != 1 || recs[0].Error == "" {
		t.Fatalf("poison records %+v, %v; want one with its error", recs, err)
	}
	texts := []string{recs[0].Error}
	for _, e := range logs.All() {
		texts = append(texts, e.Message)
		for _, v := range e.ContextMap() {
			if s, ok := v.(string); ok {
				texts = append(texts, s)
			}
		}
	}
	if logs.Len() == 0 {
		t.Fatal("nothing was logged")
	}
	for _, text := range texts {
		for _, s := range []string{"sig=", "se=", "sp=", secret} {
			if strings.Contains(text, s) {
				t.Errorf("%q appears in %q", s, text)
			}
		}
	}
}

// A handler fails with an error from a raw Azure SDK call (or any error that prints a SAS
// URL, e.g. a *url.Error from a blob download through a SAS): the poison record and the
// log carry the error redacted (errs.Redact), never the SAS signature.
func TestPoisonRecordNeverCarriesTheHandlersSAS(t *testing.T) {
	t.Parallel()
	cause := fmt.Errorf("download attachment: %w", &url.Error{Op: "Get",
		URL: "https://acct.blob.core.windows.net/c/b?sv=2022-11-02&sp=r&se=2099-01-01T00%3A00%3A00Z&sig=U0VDUkVUU0lHTkFUVVJF", Err: io.ErrUnexpectedEOF})
	env := &envelope{Kind: "k", ID: "1", Payload: json.RawMessage(`1`)}
	text := poisonText("q", "m1", "x", env, 5, cause)
	pm := parsePoison(text)
	for _, secret := range []string{"sig=", "se=", "sp=", "U0VDUkVUU0lHTkFUVVJF"} {
		if strings.Contains(pm.Error, secret) {
			t.Errorf("poison record error %q carries %q", pm.Error, secret)
		}
	}
}
