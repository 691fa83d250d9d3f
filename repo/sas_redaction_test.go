package repo_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/retry"
)

// A SAS client through the proxy: drops and 503s until retries give up; the
// OutcomeUnknownError, the retry logs and every wrapped text carry no SAS field.
func TestOutcomeUnknownAndRetryLogsCarryNoSAS(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	core, logs := observer.New(zap.DebugLevel)
	const token = "sv=2019-02-02&tn=T&sp=raud&se=2099-01-01T00%3A00%3A00Z&spk=a&sig=U0VDUkVUU0lHTkFUVVJF"
	svc, err := repo.NewTablesWithSAS(b.proxy.URL()+"/devstoreaccount1", token, nil)
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := repo.New[Counter](svc, b.name, &repo.Options{Logger: zap.New(core),
		Retry: retry.Policy{Delay: time.Millisecond, MinDelay: time.Millisecond, MaxRetries: 2}})
	if err != nil {
		t.Fatal(err)
	}
	b.proxy.AddRule(faultproxy.Rule{Match: faultproxy.IsEntityWrite, Times: 1, Action: faultproxy.DropAfterForward()})
	b.proxy.AddRule(faultproxy.Rule{Match: faultproxy.IsEntityWrite, Action: faultproxy.DropBeforeForward()})
	b.proxy.AddRule(faultproxy.Rule{Match: faultproxy.IsBatch, Times: 1, Action: faultproxy.DropAfterForward()})
	b.proxy.AddRule(faultproxy.Rule{Match: faultproxy.IsBatch, Action: faultproxy.Respond(500, "InternalError")})
	var texts []string
	for _, err := range []error{
		tbl.Insert(b.ctx, &Counter{PK: "p", RK: "r"}),
		tbl.Update(b.ctx, &Counter{PK: "p", RK: "r", ETag: `W/"x"`}, nil),
		tbl.Delete(b.ctx, "p", "r", &repo.DeleteOptions{ETag: `W/"x"`}),
		func() error { _, err := repo.Submit(b.ctx, tbl.InsertAction(&Counter{PK: "p", RK: "r"})); return err }(),
	} {
		if err == nil {
			t.Fatal("succeeded")
		}
		texts = append(texts, err.Error(), fmt.Sprintf("%+v", err))
		for e := errors.Unwrap(err); e != nil; e = errors.Unwrap(e) {
			texts = append(texts, e.Error())
		}
		var ue *repo.OutcomeUnknownError
		if errors.As(err, &ue) {
			if ue.Cause != nil {
				texts = append(texts, ue.Cause.Error())
			}
			if ue.Err != nil {
				texts = append(texts, ue.Err.Error())
			}
		}
	}
	for _, e := range logs.All() {
		texts = append(texts, e.Message)
		for _, v := range e.ContextMap() {
			texts = append(texts, fmt.Sprint(v))
		}
	}
	for _, text := range texts {
		for _, secret := range []string{"sig=", "se=", "sp=", "spk=", "U0VDUkVUU0lHTkFUVVJF"} {
			if strings.Contains(text, secret) {
				t.Errorf("%q appears in %q", secret, text)
			}
		}
	}
}
