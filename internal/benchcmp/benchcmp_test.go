package benchcmp

import (
	"errors"
	"math"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// spin does work proportional to n, so that two sides have a known ratio of costs.
func spin(n int) error {
	x := uint64(1)
	for i := range n {
		x = x*6364136223846793005 + uint64(i)
	}
	if x == 0 {
		return errors.New("unreachable")
	}
	return nil
}

// Each side is timed around its own operation alone, Prepare left out, and ratio is the
// second side's time over the first's. The sides sleep rather than compute: a sleep lasts at
// least its duration and load only lengthens it, so the bounds below are ones a loaded
// machine cannot cross (a CPU-timed ratio of 2-8 was: load stretches one side's spin and
// not the other's).
func TestRunReportsTheRatioOfTheSides(t *testing.T) {
	const light, heavy, prepare = time.Millisecond, 4 * time.Millisecond, 200 * time.Millisecond
	var prepared, ran [2]int
	res := testing.Benchmark(func(b *testing.B) {
		Run(b, &Options{Items: 10, Unit: "things"},
			Side{Name: "light", Op: func(int) error { ran[0]++; time.Sleep(light); return nil }},
			Side{Name: "heavy", Prepare: func(int) error { prepared[1]++; time.Sleep(prepare); return nil },
				Op: func(int) error { ran[1]++; time.Sleep(heavy); return nil }})
	})
	lightNs, heavyNs, ratio := res.Extra["light-ns/op"], res.Extra["heavy-ns/op"], res.Extra["ratio"]
	if lightNs < float64(light) || heavyNs < float64(heavy) {
		t.Fatalf("light %.0f ns/op, heavy %.0f ns/op: less than the %v and %v each operation sleeps (metrics %v)", lightNs, heavyNs, light, heavy, res.Extra)
	}
	// Prepare's 200 ms in heavy's time would put it at 204 ms and more; a 4 ms sleep that
	// load stretches by 196 ms on average is not a loaded machine but a stopped one.
	if heavyNs >= float64(prepare) {
		t.Fatalf("heavy %.0f ns/op: Prepare's %v counted in the operation's time (metrics %v)", heavyNs, prepare, res.Extra)
	}
	if want := heavyNs / lightNs; math.Abs(ratio-want) > 1e-9*want {
		t.Fatalf("ratio %v, want heavy's time over light's, %v (metrics %v)", ratio, want, res.Extra)
	}
	if ran[0] != ran[1] || prepared[1] != ran[1] || ran[0] == 0 {
		t.Fatalf("operations %v, prepared %v: the sides must alternate one for one", ran, prepared)
	}
	for _, m := range []string{"light-ns/op", "heavy-ns/op", "light-things/s", "heavy-things/s"} {
		if res.Extra[m] <= 0 {
			t.Errorf("metric %s missing: %v", m, res.Extra)
		}
	}
	if _, ok := res.Extra["light-req/op"]; ok {
		t.Errorf("req/op reported without Options.Requests: %v", res.Extra)
	}
}

func TestRunNamesFurtherSidesAndCountsAllocations(t *testing.T) {
	var sink []byte
	res := testing.Benchmark(func(b *testing.B) {
		Run(b, &Options{Batch: 8, Allocs: true},
			Side{Name: "one", Op: func(int) error { sink = make([]byte, 64); return nil }},
			Side{Name: "two", Op: func(int) error { sink = make([]byte, 64); sink = make([]byte, 64); return nil }},
			Side{Name: "three", Op: func(int) error { return spin(1000) }})
	})
	_ = sink
	if got := res.Extra["one-allocs/op"]; got != 1 {
		t.Errorf("one-allocs/op %v, want 1", got)
	}
	if got := res.Extra["alloc-ratio"]; got != 0.5 {
		t.Errorf("alloc-ratio %v, want 0.5", got)
	}
	if _, ok := res.Extra["ratio-three"]; !ok {
		t.Errorf("no ratio-three: %v", res.Extra)
	}
}

func TestCounterCountsRequestsPerSide(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer srv.Close()
	c := NewCounter()
	get := func() error {
		req, err := http.NewRequest(http.MethodGet, srv.URL, nil)
		if err != nil {
			return err
		}
		resp, err := c.Do(req)
		if err != nil {
			return err
		}
		return resp.Body.Close()
	}
	res := testing.Benchmark(func(b *testing.B) {
		Run(b, &Options{Requests: c.Count},
			Side{Name: "one", Prepare: func(int) error { return get() }, Op: func(int) error { return get() }},
			Side{Name: "three", Op: func(int) error {
				for range 3 {
					if err := get(); err != nil {
						return err
					}
				}
				return nil
			}})
	})
	if res.Extra["one-req/op"] != 1 || res.Extra["three-req/op"] != 3 {
		t.Fatalf("requests per operation %v, want one 1 (Prepare's not counted) and three 3", res.Extra)
	}
}

func TestWarmupRoundsAreNotTimed(t *testing.T) {
	for _, tc := range []struct {
		warmup, extra int
	}{{0, 1}, {2, 2}, {-1, 0}} {
		ran := 0
		res := testing.Benchmark(func(b *testing.B) {
			Run(b, &Options{Warmup: tc.warmup, Batch: 3},
				Side{Name: "a", Op: func(int) error { ran++; return nil }})
		})
		if want := 3 * (res.N + tc.extra); ran != want {
			t.Errorf("Warmup %d: %d operations for %d timed rounds of 3, want %d", tc.warmup, ran, res.N, want)
		}
	}
}

func TestCheck(t *testing.T) {
	if err := Check("n", 3, 3); err != nil {
		t.Fatal(err)
	}
	if err := Check("n", 2, 3); err == nil || err.Error() != "n: got 2, want 3" {
		t.Fatalf("Check(2, 3) = %v", err)
	}
}
