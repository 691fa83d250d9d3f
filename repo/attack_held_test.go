package repo_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
	"github.com/tablepatterns/tablepatterns/internal/testenv"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/repo/account"
	"github.com/tablepatterns/tablepatterns/repo/filter"
	"github.com/tablepatterns/tablepatterns/retry"
)

// A version read through Query (not Get), an update that lands with its response lost,
// another writer (sharing the same Table) builds on it: the retry knows exactly.
func TestAttackQueryReadSharedTableLostResponse(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	var tbl *repo.Table[Counter]
	var otherErr error
	tbl = table[Counter](t, b, &repo.Options{TrackWrites: true, Logger: onRetry(func() {
		// The other writer shares tbl and also reads through Query.
		cs, err := tbl.Collect(b.ctx, repo.Query{Filter: filter.Point("c", "1")})
		if err == nil && len(cs) == 1 {
			cs[0].N++
			err = tbl.Update(b.ctx, &cs[0], nil)
		}
		otherErr = err
	})})
	mustInsertCounter(t, tbl, 5)
	cs, err := tbl.Collect(b.ctx, repo.Query{Filter: filter.PartitionKey("c")})
	if err != nil || len(cs) != 1 {
		t.Fatal(cs, err)
	}
	a := cs[0]
	b.proxy.AddRule(faultproxy.Rule{Name: "lost", Match: faultproxy.IsEntityWrite, Times: 1, Action: faultproxy.DropAfterForward()})
	a.N++
	err = tbl.Update(b.ctx, &a, nil)
	if otherErr != nil {
		t.Fatal(otherErr)
	}
	got, _ := tbl.Get(b.ctx, "c", "1")
	if got.N != 7 || err != nil {
		t.Fatalf("N = %d (want 7), err = %v (want nil)", got.N, err)
	}
	a.N = 100
	if err := tbl.Update(b.ctx, &a, nil); !errors.Is(err, repo.ErrPreconditionFailed) {
		t.Fatalf("superseded value: %v", err)
	}
}

// WriteHistory 2: two writes after ours push our id out. The answer must be "unknown",
// never nil and never a refusal.
func TestAttackHistoryOverflow(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	other := table[Counter](t, b, &repo.Options{TrackWrites: true, WriteHistory: 2})
	tbl := table[Counter](t, b, &repo.Options{TrackWrites: true, WriteHistory: 2, Logger: onRetry(func() {
		for range 3 {
			c, err := other.Get(b.ctx, "c", "1")
			if err == nil {
				c.N++
				err = other.Update(b.ctx, &c, nil)
			}
			if err != nil {
				t.Error(err)
			}
		}
	})})
	mustInsertCounter(t, tbl, 5)
	a, _ := tbl.Get(b.ctx, "c", "1")
	b.proxy.AddRule(faultproxy.Rule{Name: "lost", Match: faultproxy.IsEntityWrite, Times: 1, Action: faultproxy.DropAfterForward()})
	a.N++
	err := tbl.Update(b.ctx, &a, nil)
	if !errors.Is(err, repo.ErrOutcomeUnknown) {
		t.Fatalf("overflowed history: %v, want ErrOutcomeUnknown", err)
	}
	// Same, but our write was dropped before the service: never nil.
	a, _ = tbl.Get(b.ctx, "c", "1")
	tbl2 := table[Counter](t, b, &repo.Options{TrackWrites: true, WriteHistory: 2, Logger: onRetry(func() {
		for range 3 {
			c, _ := other.Get(b.ctx, "c", "1")
			c.N++
			_ = other.Update(b.ctx, &c, nil)
		}
	})})
	a, _ = tbl2.Get(b.ctx, "c", "1")
	b.proxy.AddRule(faultproxy.Rule{Name: "drop", Match: faultproxy.IsEntityWrite, Times: 1, Action: faultproxy.DropBeforeForward()})
	a.N++
	if err := tbl2.Update(b.ctx, &a, nil); err == nil || errors.Is(err, repo.ErrOutcomeUnknown) == false && !errors.Is(err, repo.ErrPreconditionFailed) {
		t.Fatalf("dropped write, overflowed history: %v", err)
	}
}

// Malformed or forged histories in the stored entity: no panic, never "applied" for a
// write that was dropped before the service.
func TestAttackForgedHistories(t *testing.T) {
	t.Parallel()
	forged := []string{"", " ", "?", "? ?", "+", "++AAAAAAAAAAA", "+AAAAAAAAAAA", "AAAAAAAAAAA  ?", "AAAAAAAAAAA ?x",
		"AAAAAAAAAAA\tBBBBBBBBBBB", "AAAAAAAAAA\u00e9", strings.Repeat("AAAAAAAAAAA ", 2500) + "?", "+?", "?+AAAAAAAAAAA",
		"AAAAAAAAAAA +BBBBBBBBBBB +CCCCCCCCCCC", "\u2028", "AAAAAAAAAAA\u2028?"}
	b := setup(t, true)
	raw := testenv.TableService(t).NewClient(b.name)
	for i, h := range forged {
		rk := fmt.Sprint(i)
		put := func(n int) {
			body, _ := json.Marshal(map[string]any{"PartitionKey": "f", "RowKey": rk, "N": fmt.Sprint(n), "N@odata.type": "Edm.Int64", repo.DefaultWriteIDProperty: h})
			if _, err := raw.UpsertEntity(b.ctx, body, &aztables.UpsertEntityOptions{UpdateMode: aztables.UpdateModeReplace}); err != nil {
				t.Fatal(err)
			}
		}
		put(1)
		tbl := table[Counter](t, b, &repo.Options{TrackWrites: true, Logger: onRetry(func() { put(2) })})
		c, err := tbl.Get(b.ctx, "f", rk)
		if err != nil {
			t.Fatal(err)
		}
		b.proxy.AddRule(faultproxy.Rule{Match: faultproxy.IsEntityWrite, Times: 1, Action: faultproxy.DropBeforeForward()})
		c.N = 50
		if err := tbl.Update(b.ctx, &c, nil); err == nil {
			t.Errorf("history %q: dropped update reported applied", h)
		}
		// An insert meeting a forged entity.
		b.proxy.AddRule(faultproxy.Rule{Match: faultproxy.IsInsertEntity, Times: 1, Action: faultproxy.DropBeforeForward()})
		if err := tbl.Insert(b.ctx, &Counter{PK: "f", RK: rk}); err == nil {
			t.Errorf("history %q: dropped insert reported applied", h)
		}
	}
}

// U+2028 in keys, tracked transaction with a lost response, another writer in between.
func TestAttackLineSeparatorKeysTrackedTransaction(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	pk, rk := "p\u2028k", "r\u2029k'o"
	other := table[Counter](t, b, &repo.Options{TrackWrites: true})
	tbl := table[Counter](t, b, &repo.Options{TrackWrites: true, Logger: onRetry(func() {
		c, err := other.Get(b.ctx, pk, rk)
		if err == nil {
			c.X = 1.5
			err = other.Update(b.ctx, &c, nil)
		}
		if err != nil {
			t.Error(err)
		}
	})})
	b.proxy.AddRule(faultproxy.Rule{Match: faultproxy.IsBatch, Times: 1, Action: faultproxy.DropAfterForward()})
	c := &Counter{PK: pk, RK: rk, N: 1}
	if _, err := repo.Submit(b.ctx, tbl.InsertAction(c), tbl.InsertAction(&Counter{PK: pk, RK: rk + "2"})); err != nil {
		t.Fatal(err)
	}
	c.N = 9
	if err := tbl.Update(b.ctx, c, nil); !errors.Is(err, repo.ErrPreconditionFailed) {
		t.Fatalf("superseded: %v", err)
	}
}

// Context cancelled while the request is held at the proxy (it may or may not be
// forwarded later): the answer is ErrOutcomeUnknown, never nil or a refusal.
func TestAttackCancelMidRequest(t *testing.T) {
	t.Parallel()
	for _, track := range []bool{false, true} {
		b := setup(t, true)
		tbl := table[Counter](t, b, &repo.Options{TrackWrites: track})
		mustInsertCounter(t, tbl, 5)
		a, _ := tbl.Get(b.ctx, "c", "1")
		for _, op := range []string{"insert", "update", "delete", "submit"} {
			ps := b.proxy.PauseAt("hold-"+op, func(r *http.Request) bool { return faultproxy.IsEntityWrite(r) || faultproxy.IsBatch(r) }, 1)
			ctx, cancel := context.WithCancel(b.ctx)
			done := make(chan error, 1)
			go func() {
				switch op {
				case "insert":
					done <- tbl.Insert(ctx, &Counter{PK: "c", RK: "new"})
				case "update":
					a.N++
					done <- tbl.Update(ctx, &a, nil)
				case "delete":
					done <- tbl.Delete(ctx, "c", "1", &repo.DeleteOptions{ETag: a.ETag})
				case "submit":
					_, err := repo.Submit(ctx, tbl.InsertAction(&Counter{PK: "c", RK: "tx"}))
					done <- err
				}
			}()
			if err := ps.Wait(b.ctx); err != nil {
				t.Fatal(err)
			}
			cancel()
			err := <-done
			ps.Release()
			if !errors.Is(err, repo.ErrOutcomeUnknown) {
				t.Errorf("track=%v %s cancelled mid-request: %v, want ErrOutcomeUnknown", track, op, err)
			}
		}
	}
}

// Malformed $batch answers of every status, with and without batchPolicy: no panic, never
// nil (the proxy answered without forwarding: nothing was written).
func TestAttackMalformedBatchAnswers(t *testing.T) {
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

// A SAS client through the proxy: drops and 503s until retries give up; the
// OutcomeUnknownError, the retry logs and every wrapped text carry no SAS field.
func TestAttackOutcomeUnknownCarriesNoSAS(t *testing.T) {
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
