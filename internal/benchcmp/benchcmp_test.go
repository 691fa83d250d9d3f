package benchcmp

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
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

func TestRunReportsTheRatioOfTheSides(t *testing.T) {
	var prepared, ran [2]int
	res := testing.Benchmark(func(b *testing.B) {
		Run(b, &Options{Items: 10, Unit: "things"},
			Side{Name: "light", Op: func(int) error { ran[0]++; return spin(20000) }},
			Side{Name: "heavy", Prepare: func(int) error { prepared[1]++; return spin(200000) },
				Op: func(int) error { ran[1]++; return spin(80000) }})
	})
	ratio := res.Extra["ratio"]
	if ratio < 2 || ratio > 8 { // 4x the work, and Prepare's 40x left out of the time
		t.Fatalf("ratio %.2f, want about 4 (metrics %v)", ratio, res.Extra)
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
