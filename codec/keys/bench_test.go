package keys

import (
	"fmt"
	"testing"
	"time"

	"github.com/tablepatterns/tablepatterns/internal/benchcmp"
)

func BenchmarkJoin(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		_ = Join("Sales", "000123", "a.b@example.com")
	}
}

func BenchmarkSplit(b *testing.B) {
	k := Join("Sales", "000123", "a.b@example.com")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Split(k); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkPlainJoin(b *testing.B) {
	c := MustNew("_")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Join("empid", "000123", "2012"); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkInvertedTicks(b *testing.B) {
	t := time.Now()
	b.ReportAllocs()
	for b.Loop() {
		_ = InvertedTicks(t)
	}
}

func BenchmarkHashPrefix(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		_ = HashPrefix("200001", 4)
	}
}

// BenchmarkJoinVersusSprintf compares Join, which escapes its separator inside the parts so
// that Split gives them back, with the hand-written key a user would build otherwise
// (fmt.Sprintf with an underscore: shorter to write, ambiguous as soon as a part holds the
// separator), alternated in batches in one run. ratio above 1: Join is faster.
func BenchmarkJoinVersusSprintf(b *testing.B) {
	parts := []string{"Sales", "000123", "a.b@example.com"}
	var sink string
	benchcmp.Run(b, &benchcmp.Options{Batch: 256, Allocs: true},
		benchcmp.Side{Name: "join", Op: func(int) error {
			sink = Join(parts...)
			return nil
		}},
		benchcmp.Side{Name: "sprintf", Op: func(int) error {
			sink = fmt.Sprintf("%s_%s_%s", parts[0], parts[1], parts[2])
			return nil
		}})
	_ = sink
}

// BenchmarkInvertedTicksVersusSprintf compares InvertedTicks with the guide's own
// formulation of the log-tail key, string.Format("{0:D19}", DateTime.MaxValue.Ticks -
// DateTime.UtcNow.Ticks), written in Go with fmt.Sprintf.
func BenchmarkInvertedTicksVersusSprintf(b *testing.B) {
	t := time.Date(2024, 5, 1, 13, 4, 5, 0, time.UTC)
	var sink string
	benchcmp.Run(b, &benchcmp.Options{Batch: 256, Allocs: true},
		benchcmp.Side{Name: "invertedticks", Op: func(int) error {
			sink = InvertedTicks(t)
			return nil
		}},
		benchcmp.Side{Name: "sprintf", Op: func(int) error {
			sink = fmt.Sprintf("%019d", MaxTicks-Ticks(t))
			return nil
		}})
	if want := fmt.Sprintf("%019d", MaxTicks-Ticks(t)); InvertedTicks(t) != want {
		b.Fatalf("InvertedTicks %s, want %s", InvertedTicks(t), want)
	}
	_ = sink
}
