package repo_test

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"

	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
	"github.com/tablepatterns/tablepatterns/internal/testenv"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/repo/account"
	"github.com/tablepatterns/tablepatterns/retry"
)

// These tests answer $batch requests from a loopback test server, because Azurite never
// sends these answers: a malformed 202/204 body, and a changeset whose action answers 503.

// changeset renders a $batch answer whose changeset holds the given sub-responses.
func changeset(subs ...string) (contentType, body string) {
	var b strings.Builder
	b.WriteString("--batchresponse_1\r\nContent-Type: multipart/mixed; boundary=changesetresponse_1\r\n\r\n")
	for _, s := range subs {
		b.WriteString("--changesetresponse_1\r\nContent-Type: application/http\r\nContent-Transfer-Encoding: binary\r\n\r\n")
		b.WriteString(s)
		b.WriteString("\r\n")
	}
	b.WriteString("--changesetresponse_1--\r\n--batchresponse_1--\r\n")
	return "multipart/mixed; boundary=batchresponse_1", b.String()
}

func subResponse(status int, code string) string {
	if status < 300 {
		return fmt.Sprintf("HTTP/1.1 %d No Content\r\nETag: W/\"datetime'2026-11-23T00%%3A00%%3A00Z'\"\r\n\r\n", status)
	}
	body := fmt.Sprintf(`{"odata.error":{"code":%q,"message":{"lang":"en-US","value":"0:%s"}}}`, code, code)
	return fmt.Sprintf("HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", status, code, len(body), body)
}

// batchServer answers each $batch with the next of answers (the last one repeats).
func batchServer(t *testing.T, answers ...func(w http.ResponseWriter)) (*repo.Table[Counter], *atomic.Int32) {
	t.Helper()
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		i := int(n.Add(1)) - 1
		answers[min(i, len(answers)-1)](w)
	}))
	t.Cleanup(srv.Close)
	svc, err := aztables.NewServiceClientWithNoCredential(srv.URL+"/acct", repo.TableClientOptions(&aztables.ClientOptions{ClientOptions: testenv.ClientOptions()}))
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := repo.New[Counter](svc, "Counters", &repo.Options{Retry: retry.Policy{Delay: time.Millisecond, MinDelay: time.Millisecond, MaxRetries: 3}})
	if err != nil {
		t.Fatal(err)
	}
	return tbl, &n
}

func raw(status int, contentType, body string) func(w http.ResponseWriter) {
	return func(w http.ResponseWriter) {
		if contentType != "" {
			w.Header().Set("Content-Type", contentType)
		}
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}
}

// A 202 or 204 whose body is empty, truncated or has no boundary line would make aztables
// slice out of range inside Submit. No answer may crash the caller; the transaction may
// have been committed, so after the retries it is an outcome the caller cannot know.
func TestMalformedBatchAnswersNeverPanic(t *testing.T) {
	t.Parallel()
	ct, good := changeset(subResponse(204, ""))
	bodies := map[string]string{
		"empty":          "",
		"one byte":       "-",
		"no newline":     "--batchresponse_1",
		"no boundary":    "garbage\r\nmore",
		"truncated":      good[:40],
		"inner no line":  "--batchresponse_1\r\nContent-Type: multipart/mixed\r\n\r\n--x",
		"only delimiter": "--\n",
	}
	for name, body := range bodies {
		for _, status := range []int{202, 204} {
			t.Run(fmt.Sprintf("%s %d", name, status), func(t *testing.T) {
				t.Parallel()
				tbl, n := batchServer(t, raw(status, ct, body))
				_, err := repo.Submit(t.Context(), tbl.InsertAction(&Counter{PK: "p", RK: "r"}))
				if err == nil {
					t.Fatal("a malformed answer was taken for success")
				}
				var ue *repo.OutcomeUnknownError
				if !errors.As(err, &ue) || !errors.Is(ue.Err, repo.ErrTransient) {
					t.Fatalf("%v: want ErrOutcomeUnknown after ErrTransient", err)
				}
				if n.Load() != 4 {
					t.Fatalf("%d requests, want 4 (a malformed answer is retried)", n.Load())
				}
			})
		}
	}
}

// An action answering 503 ServerBusy or 500 OperationTimedOut inside the changeset is
// transient like the same answer outside one: the outer 202 must not classify it as an
// *ActionError that is never retried.
func TestTransientActionIsRetried(t *testing.T) {
	t.Parallel()
	ct, okBody := changeset(subResponse(204, ""))
	for _, code := range []struct {
		status int
		code   string
	}{{503, "ServerBusy"}, {500, "OperationTimedOut"}, {500, "InternalError"}} {
		_, failed := changeset(subResponse(code.status, code.code))
		tbl, n := batchServer(t, raw(202, ct, failed), raw(202, ct, okBody))
		var ae *repo.ActionError
		if !retry.IsTransient(&repo.ActionError{StatusCode: code.status, Code: code.code, Err: errors.New("202")}) {
			t.Fatalf("%s: an action error is not transient", code.code)
		}
		c := &Counter{PK: "p", RK: "r", ETag: `W/"x"`}
		_, err := repo.Submit(t.Context(), tbl.UpdateAction(c, nil))
		if err != nil || n.Load() != 2 {
			t.Fatalf("%s: %v after %d requests (as ActionError: %v), want success on the retry", code.code, err, n.Load(), errors.As(err, &ae))
		}
		if !retry.MayHaveApplied(&repo.ActionError{StatusCode: code.status, Code: code.code}) != (code.code == "ServerBusy") {
			t.Fatalf("%s: MayHaveApplied is wrong", code.code)
		}
	}
}

// Malformed $batch answers of every status, with and without batchPolicy: no panic, never
// nil (the proxy answered without forwarding: nothing was written).
func TestMalformedBatchAnswersNeverReadAsCommitted(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	ps := testenv.Proxies(t)
	clients, err := account.NewClients(ps.ConnectionString, nil)
	if err != nil {
		t.Fatal(err)
	}
	rp := retry.Policy{Delay: time.Millisecond, MinDelay: time.Millisecond, MaxRetries: 2}
	for _, withPolicy := range []bool{true, false} {
		svc := clients.Tables
		if !withPolicy {
			svc = testenv.TableServiceFrom(t, ps.ConnectionString)
		}
		tbl, err := repo.New[Counter](svc, b.name, &repo.Options{Retry: rp})
		if err != nil {
			t.Fatal(err)
		}
		for i, st := range []int{200, 201, 202, 204, 206, 207, 300, 302, 304} {
			for _, code := range []string{"", "ServerBusy", "EntityAlreadyExists"} {
				rk := fmt.Sprintf("%v-%d-%s", withPolicy, i, code)
				ps.Table.AddRule(faultproxy.Rule{Name: rk, Match: faultproxy.IsBatch, Action: faultproxy.Respond(st, code)})
				_, err := repo.Submit(b.ctx, tbl.InsertAction(&Counter{PK: "m", RK: rk}))
				ps.Table.ClearRules()
				if err == nil {
					t.Errorf("policy=%v status %d code %q: Submit returned nil, nothing was written", withPolicy, st, code)
				}
			}
		}
	}
}
