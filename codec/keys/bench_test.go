package keys

import (
	"testing"
	"time"
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
