package main

import (
	"strings"
	"testing"

	"github.com/tablepatterns/tablepatterns/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

func TestExampleRuns(t *testing.T) {
	var out strings.Builder
	if err := run(t.Context(), &out, testenv.ConnectionString(t)); err != nil {
		t.Fatalf("example failed: %v\n%s", err, out.String())
	}
	for _, want := range []string{
		"advisor, PartitionKey = hour: hot partition, skew 100%, peak 3000 entities/s",
		"Spread it over 16 buckets",
		"advisor, PartitionKey = order number: append-only (100% of writes at the highest key)",
		"advisor, PartitionKey = hash prefix + order number (ee8f_200001, ",
		"): spread",
		"advisor, PartitionKey = department_employee: spread, 200 partitions, peak 15 entities/s per partition",
		"stored 800 accesses of hour 2014073118 in 8 bucket partitions",
		"18:00:00.266 ", "the whole hour: 800 accesses from 8 queries",
		"concatenated keys in order: 000016!a100!066661 000054!a100!006777 000054!a1001!006777 000167!a101!283408",
		"stress test of partition Sales_000123: 400 ops, 0 errors",
		"key spreading example finished",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}
