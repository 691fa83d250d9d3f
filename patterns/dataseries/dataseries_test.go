package dataseries_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
	"github.com/tablepatterns/tablepatterns/patterns/dataseries"
	"github.com/tablepatterns/tablepatterns/patterns/internal/testbed"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/retry"
)

// Setting one point sends a merge of that one property; other points and other properties
// stay. The whole series is read back with one request.
func TestSetIsAMergeOfOneProperty(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	s := hours(t, b, nil)
	var mu sync.Mutex
	var bodies []map[string]any
	b.Proxy().AddRule(faultproxy.Rule{Name: "capture", Match: func(r *http.Request) bool {
		if faultproxy.IsEntityWrite(r) {
			var m map[string]any
			raw, _ := io.ReadAll(r.Body)
			_ = json.Unmarshal(raw, &m)
			mu.Lock()
			bodies = append(bodies, m)
			mu.Unlock()
		}
		return false
	}})
	// Another application keeps the employee's name in the same entity.
	other := &codec.Entity{PartitionKey: "000123", RowKey: "20240501", Properties: map[string]any{"EmployeeName": "Don Hall"}}
	if err := s.Table().Upsert(b.Ctx, other, nil); err != nil {
		t.Fatal(err)
	}
	if err := s.Set(b.Ctx, "000123", "20240501", 13, 42); err != nil {
		t.Fatal(err)
	}
	if err := s.Set(b.Ctx, "000123", "20240501", 5, 7); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	last := bodies[len(bodies)-1]
	mu.Unlock()
	var props []string
	for k := range last {
		props = append(props, k)
	}
	slices.Sort(props)
	if !slices.Equal(props, []string{"H05", "H05@odata.type", "PartitionKey", "RowKey"}) {
		t.Fatalf("Set sent the properties %v, want only H05", props)
	}
	if b.Proxy().CountMatching(func(r faultproxy.RequestInfo) bool { return r.Method == "MERGE" || r.Method == "PATCH" }) != 2 {
		t.Fatal("Set did not use merge")
	}
	mark := b.Proxy().Count()
	got, err := s.Get(b.Ctx, "000123", "20240501")
	if err != nil {
		t.Fatal(err)
	}
	if n := b.Proxy().Count() - mark; n != 1 {
		t.Fatalf("Get sent %d requests", n)
	}
	want := make([]int64, 24)
	want[13], want[5] = 42, 7
	if !slices.Equal(got.Points, want) || got.ETag == "" {
		t.Fatalf("points %v (etag %q), want %v", got.Points, got.ETag, want)
	}
	e, err := s.Table().Get(b.Ctx, "000123", "20240501")
	if err != nil || e.Properties["EmployeeName"] != "Don Hall" {
		t.Fatalf("the other property was lost: %v %v", e.Properties, err)
	}
	if _, err := s.Get(b.Ctx, "000123", "19990101"); !errors.Is(err, repo.ErrNotFound) {
		t.Fatalf("Get of a missing series: %v", err)
	}
}

// Many goroutines add to the same points at once under If-Match: no update is lost, and
// the test proves that writers did collide.
func TestConcurrentAddsLoseNoUpdate(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	core, logs := observer.New(zap.WarnLevel)
	s := hoursWith(t, b, &repo.Options{Logger: zap.New(core)}, nil)
	const writers, adds = 12, 15
	var wg sync.WaitGroup
	errc := make(chan error, writers*adds)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range adds {
				hour := 9
				if i%3 == 0 {
					hour = 10 + w%2
				}
				if _, err := s.Add(b.Ctx, "000123", "20240501", hour, int64(1+w%2), nil); err != nil {
					errc <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
	got, err := s.Get(b.Ctx, "000123", "20240501")
	if err != nil {
		t.Fatal(err)
	}
	want := make([]int64, 24)
	for w := range writers {
		for i := range adds {
			hour := 9
			if i%3 == 0 {
				hour = 10 + w%2
			}
			want[hour] += int64(1 + w%2)
		}
	}
	if !slices.Equal(got.Points, want) {
		t.Fatalf("points %v, want %v", got.Points, want)
	}
	conflicts := logs.FilterMessage("retrying").FilterField(zap.String("op", "series update")).Len()
	if conflicts == 0 {
		t.Fatal("no writer ever lost a race: the test did not exercise If-Match")
	}
	t.Logf("%d adds, %d conflicts retried", writers*adds, conflicts)
}

// With operation ids, every operation counts once: each is delivered twice, concurrently,
// in random order, while a fifth of the writes lose their response.
func TestAddWithOpIDCountsEachOperationOnce(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	s := hours(t, b, nil)
	b.Proxy().SetSeed(11)
	b.Proxy().AddRule(faultproxy.Rule{Name: "lost", Match: faultproxy.IsEntityWrite, Probability: 0.2, Action: faultproxy.DropAfterForward()})
	const ops = 40
	deliveries := make([]int, 0, 2*ops)
	for i := range ops {
		deliveries = append(deliveries, i, i)
	}
	rand.New(rand.NewPCG(1, 2)).Shuffle(len(deliveries), func(i, j int) { deliveries[i], deliveries[j] = deliveries[j], deliveries[i] })
	var wg sync.WaitGroup
	errc := make(chan error, len(deliveries))
	sem := make(chan struct{}, 6)
	for _, op := range deliveries {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			// An unknown outcome is settled as a caller settles it: the same operation
			// again, which counts once whether or not the first landed.
			var err error
			for range 20 {
				if _, err = s.Add(b.Ctx, "000123", "20240501", op%24, 1, &dataseries.AddOptions{OpID: fmt.Sprintf("msg-%03d", op)}); !errors.Is(err, repo.ErrOutcomeUnknown) {
					break
				}
			}
			errc <- err
		}()
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		if err != nil {
			t.Fatal(err)
		}
	}
	if b.Proxy().Fired("lost") == 0 {
		t.Fatal("no response was lost: the test did not exercise the ambiguous case")
	}
	b.Proxy().ClearRules()
	got, err := s.Get(b.Ctx, "000123", "20240501")
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	for h, v := range got.Points {
		want := int64(ops / 24)
		if h < ops%24 {
			want++
		}
		if v != want {
			t.Errorf("H%02d = %d, want %d", h, v, want)
		}
		total += v
	}
	if total != ops {
		t.Fatalf("%d counted for %d operations", total, ops)
	}
}

// Without operation ids from the caller, 24 goroutines x 25 adds under 20 % faults (503,
// 500, responses lost after the write, requests dropped before it): every acknowledged add
// is stored once, no add is stored twice, and only an add answered ErrOutcomeUnknown may
// be stored without its acknowledgement. Each Add carries a generated id, so a lost
// response that another writer's change followed is recognised, never applied again.
func TestAddWithoutOpIDUnderFaultsNeverCountsTwice(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	s := hoursWith(t, b, &repo.Options{Retry: retry.Policy{Delay: time.Millisecond, MinDelay: time.Millisecond, MaxDelay: 20 * time.Millisecond, MaxRetries: 30}}, nil)
	b.Proxy().SetSeed(5)
	b.Proxy().AddRule(faultproxy.Rule{Name: "busy", Match: faultproxy.IsEntityWrite, Probability: 0.06, Action: faultproxy.Respond(503, "ServerBusy")})
	b.Proxy().AddRule(faultproxy.Rule{Name: "timeout", Match: faultproxy.IsEntityWrite, Probability: 0.04, Action: faultproxy.Respond(500, "OperationTimedOut")})
	b.Proxy().AddRule(faultproxy.Rule{Name: "drop-before", Match: faultproxy.IsEntityWrite, Probability: 0.04, Action: faultproxy.DropBeforeForward()})
	b.Proxy().AddRule(faultproxy.Rule{Name: "lost", Match: faultproxy.IsEntityWrite, Probability: 0.06, Action: faultproxy.DropAfterForward()})
	const writers, adds = 24, 25
	var acked, unknown atomic.Int64
	var wg sync.WaitGroup
	errc := make(chan error, writers*adds)
	for range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range adds {
				_, err := s.Add(b.Ctx, "000123", "20240501", 9, 1, nil)
				switch {
				case errors.Is(err, repo.ErrOutcomeUnknown):
					unknown.Add(1)
				case err != nil:
					errc <- err
				default:
					acked.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Fatalf("an add failed: %v", err)
	}
	if b.Proxy().Fired("lost") == 0 || b.Proxy().Fired("timeout") == 0 {
		t.Fatal("no response was lost: the test did not exercise the ambiguous case")
	}
	b.Proxy().ClearRules()
	got, err := s.Get(b.Ctx, "000123", "20240501")
	if err != nil {
		t.Fatal(err)
	}
	if got.Points[9] < acked.Load() || got.Points[9] > acked.Load()+unknown.Load() {
		t.Fatalf("%d stored for %d acknowledged adds and %d unknown outcomes", got.Points[9], acked.Load(), unknown.Load())
	}
}

// Conflict{MaxRetries: 5} keeps the conflict delays of the default policy for the fields it
// leaves zero, instead of running with the transient defaults (200 ms and up).
func TestPartialConflictPolicyKeepsConflictDelays(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	core, logs := observer.New(zap.WarnLevel)
	s := hoursWith(t, b, &repo.Options{Logger: zap.New(core)}, &dataseries.Options{Conflict: retry.Policy{MaxRetries: 40}})
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 5 {
				if _, err := s.Add(b.Ctx, "p", "r", 1, 1, nil); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	entries := logs.FilterMessage("retrying").FilterField(zap.String("op", "series update")).All()
	if len(entries) == 0 {
		t.Fatal("no conflict was retried")
	}
	for _, e := range entries {
		if d := e.ContextMap()["delay"].(time.Duration); d > retry.Conflict().MaxDelay {
			t.Fatalf("a conflict waited %v, more than the conflict policy's %v: the transient defaults were used", d, retry.Conflict().MaxDelay)
		}
	}
}

// A crash before or after the write of an Add, then a rerun with the same operation id,
// leaves the point added to once.
func TestAddCrashAndRerun(t *testing.T) {
	t.Parallel()
	for _, drop := range []struct {
		name   string
		action faultproxy.Action
	}{{"before", faultproxy.DropBeforeForward()}, {"after", faultproxy.DropAfterForward()}} {
		t.Run("crash="+drop.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, true)
			// No transient retries: the first call fails like a process that stops there.
			once := hoursWith(t, b, &repo.Options{Retry: retry.NoRetry()}, &dataseries.Options{Conflict: retry.NoRetry()})
			s := hours(t, b, nil)
			if err := s.Set(b.Ctx, "E", "D", 4, 10); err != nil {
				t.Fatal(err)
			}
			b.Proxy().AddRule(faultproxy.Rule{Name: "crash", Match: faultproxy.IsEntityWrite, Times: 1, Action: drop.action})
			// Dropped before the service, the add did not happen; dropped after it, the add
			// may report success only because its re-read found its id.
			if _, err := once.Add(b.Ctx, "E", "D", 4, 5, &dataseries.AddOptions{OpID: "evt-1"}); err == nil && drop.name == "before" {
				t.Fatal("the crashed add reported success")
			}
			for range 2 { // the rerun, and a duplicate of it
				v, err := s.Add(b.Ctx, "E", "D", 4, 5, &dataseries.AddOptions{OpID: "evt-1"})
				if err != nil || v != 15 {
					t.Fatalf("rerun: %d %v, want 15", v, err)
				}
			}
			got, _ := s.Get(b.Ctx, "E", "D")
			if got.Points[4] != 15 {
				t.Fatalf("H04 = %d, want 15", got.Points[4])
			}
		})
	}
}

// Update changes several points in one conditional write; an error of fn writes nothing.
func TestUpdateAndPut(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	s := hours(t, b, nil)
	series, err := s.Update(b.Ctx, "E", "D", func(p []int64) error {
		for i := range p {
			p[i] = int64(i * i)
		}
		return nil
	}, nil)
	if err != nil || series.Points[23] != 529 || series.ETag == "" {
		t.Fatalf("Update of a new series: %v %v", series, err)
	}
	boom := errors.New("boom")
	if _, err := s.Update(b.Ctx, "E", "D", func(p []int64) error { p[0] = 99; return boom }, nil); err != boom {
		t.Fatalf("fn's error: %v", err)
	}
	got, _ := s.Get(b.Ctx, "E", "D")
	if got.Points[0] != 0 {
		t.Fatal("a failed Update wrote")
	}
	// Put is conditional on the ETag it carries.
	stale := got
	stale.Points = slices.Clone(got.Points)
	got.Points[1] = -1
	if err := s.Put(b.Ctx, &got); err != nil {
		t.Fatal(err)
	}
	stale.Points[2] = -2
	if err := s.Put(b.Ctx, &stale); !errors.Is(err, repo.ErrPreconditionFailed) {
		t.Fatalf("Put with a stale ETag: %v", err)
	}
	stale.ETag = ""
	if err := s.Put(b.Ctx, &stale); err != nil { // unconditional
		t.Fatal(err)
	}
	final, _ := s.Get(b.Ctx, "E", "D")
	if final.Points[1] != 1 || final.Points[2] != -2 {
		t.Fatalf("points %v", final.Points)
	}
}

// Other numeric types store as their own Edm type and read each other's points.
func TestNumericTypes(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	f, err := dataseries.New[float64](table(b, nil), dataseries.Layout{Points: 3}, nil)
	if err != nil {
		t.Fatal(err)
	}
	i32, _ := dataseries.New[int32](table(b, nil), dataseries.Layout{Points: 3}, nil)
	i64, _ := dataseries.New[int64](table(b, nil), dataseries.Layout{Points: 3}, nil)
	if err := f.Put(b.Ctx, &dataseries.Series[float64]{PartitionKey: "f", RowKey: "1", Points: []float64{1.5, 2, -3}}); err != nil {
		t.Fatal(err)
	}
	if v, err := f.Add(b.Ctx, "f", "1", 0, 0.25, nil); err != nil || v != 1.75 {
		t.Fatalf("float add: %v %v", v, err)
	}
	// The service answers a whole Double without its annotation; it still reads as 2.
	if got, err := f.Get(b.Ctx, "f", "1"); err != nil || !slices.Equal(got.Points, []float64{1.75, 2, -3}) {
		t.Fatalf("float series: %v %v", got, err)
	}
	if err := i32.Set(b.Ctx, "i", "1", 2, 7); err != nil {
		t.Fatal(err)
	}
	if got, err := i64.Get(b.Ctx, "i", "1"); err != nil || got.Points[2] != 7 {
		t.Fatalf("int64 read of an Int32 point: %v %v", got, err)
	}
	if err := f.Table().Upsert(b.Ctx, &codec.Entity{PartitionKey: "x", RowKey: "1", Properties: map[string]any{"P0": "text"}}, nil); err != nil {
		t.Fatal(err)
	}
	var de *codec.DecodeError
	if _, err := i64.Get(b.Ctx, "x", "1"); !errors.As(err, &de) || de.Property != "P0" {
		t.Fatalf("a text point: %v", err)
	}
}

// A series too long for one entity is refused at construction, by design, with an error
// that names the way out; bad input never reaches the service.
func TestLimitsAndBadInput(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	_, err := dataseries.New[int64](table(b, nil), dataseries.Layout{Points: 365}, nil)
	var ie *repo.InvalidInputError
	if !errors.As(err, &ie) || ie.Limit != dataseries.MaxPoints || !strings.Contains(err.Error(), "wideentity") {
		t.Fatalf("365 points: %v", err)
	}
	if _, err := dataseries.New[int64](table(b, nil), dataseries.Layout{Points: dataseries.MaxPoints}, nil); err != nil {
		t.Fatalf("%d points: %v", dataseries.MaxPoints, err)
	}
	for name, c := range map[string]struct {
		l dataseries.Layout
		o *dataseries.Options
	}{
		"no points":    {dataseries.Layout{}, nil},
		"digit prefix": {dataseries.Layout{Points: 3, Prefix: "1"}, nil},
		"dash prefix":  {dataseries.Layout{Points: 3, Prefix: "H-"}, nil},
		"history":      {dataseries.Layout{Points: 3}, &dataseries.Options{OpHistory: 1000}},
		"policy":       {dataseries.Layout{Points: 3}, &dataseries.Options{Conflict: retry.Policy{MaxRetries: -5}}},
	} {
		if _, err := dataseries.New[int64](table(b, nil), c.l, c.o); !errors.Is(err, repo.ErrInvalidInput) {
			t.Errorf("%s: %v", name, err)
		}
	}
	untracked := testbed.NewTable[codec.Entity](b, nil)
	if _, err := dataseries.New[int64](untracked, dataseries.Layout{Points: 3}, nil); !errors.As(err, &ie) || !strings.Contains(ie.Field, "TrackWrites") {
		t.Errorf("a table without TrackWrites: %v, want an *InvalidInputError naming the option", err)
	}
	if _, err := dataseries.New[int64](nil, dataseries.Layout{Points: 3}, nil); !errors.As(err, &ie) {
		t.Errorf("a nil table: %v, want an *InvalidInputError", err)
	}
	s := hours(t, b, nil)
	mark := b.Proxy().Count()
	calls := map[string]error{}
	calls["set 24"] = s.Set(b.Ctx, "E", "D", 24, 1)
	calls["set -1"] = s.Set(b.Ctx, "E", "D", -1, 1)
	calls["set bad pk"] = s.Set(b.Ctx, "E/1", "D", 1, 1)
	calls["set empty pk"] = s.Set(b.Ctx, "", "D", 1, 1)
	_, calls["add bad rk"] = s.Add(b.Ctx, "E", "D#", 1, 1, nil)
	_, calls["add bad op"] = s.Add(b.Ctx, "E", "D", 1, 1, &dataseries.AddOptions{OpID: "a b"})
	_, calls["add long op"] = s.Add(b.Ctx, "E", "D", 1, 1, &dataseries.AddOptions{OpID: strings.Repeat("x", 65)})
	_, calls["get bad"] = s.Get(b.Ctx, "E?", "D")
	calls["put short"] = s.Put(b.Ctx, &dataseries.Series[int64]{PartitionKey: "E", RowKey: "D", Points: make([]int64, 23)})
	calls["put nil"] = s.Put(b.Ctx, nil)
	_, calls["update nil"] = s.Update(b.Ctx, "E", "D", nil, nil)
	for name, err := range calls {
		if !errors.As(err, &ie) {
			t.Errorf("%s: %v, want an *InvalidInputError", name, err)
		}
	}
	if n := b.Proxy().Count() - mark; n != 0 {
		t.Fatalf("%d requests sent for refused input", n)
	}
	if s.PointName(0) != "H00" || s.PointName(23) != "H23" || s.PointName(24) != "" {
		t.Fatalf("point names %q %q %q", s.PointName(0), s.PointName(23), s.PointName(24))
	}
}
