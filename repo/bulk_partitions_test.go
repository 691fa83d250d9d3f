package repo_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
	"github.com/tablepatterns/tablepatterns/repo"
)

// defaultPartitionConcurrency is repo.Options.PartitionConcurrency's default: the most
// transactions BulkWrite runs at once in one partition.
const defaultPartitionConcurrency = 2

// TestBulkWriteSpreadsTransactionsOverPartitions writes one hot partition (1,200
// entities) and eight cold ones (100 each, within a partition's burst: only the hot one
// can be refused, so that its rate is what the Gate learns) with BulkWrite, 8
// transactions at once and the default retry policy, through a model where each
// partition serves 100 entities/s and the account has no limit. From the model's per-partition counts: no partition ever has more
// than the bound of transactions in flight, so the hot one never holds every worker; the
// hot partition is refused, and the cold ones are all written before it ends (they do not
// wait behind it, and its throttling does not slow them to its pace); the requests stay
// within the storm bound; every entity is stored once.
func TestBulkWriteSpreadsTransactionsOverPartitions(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	model, err := b.proxy.EmulateThrottling(&faultproxy.ThrottleOptions{PartitionRate: 100, AccountRate: -1})
	if err != nil {
		t.Fatal(err)
	}
	emps, err := repo.New[Employee](b.clients.Tables, b.name, nil)
	if err != nil {
		t.Fatal(err)
	}
	const hot, cold, hotN, coldN = "D000", 8, 1200, 100
	var items []*Employee
	for i := range hotN {
		items = append(items, employee(hot, fmt.Sprintf("%05d", i)))
	}
	for p := 1; p <= cold; p++ {
		for i := range coldN {
			items = append(items, employee(fmt.Sprintf("D%03d", p), fmt.Sprintf("%05d", i)))
		}
	}
	model.Reset()
	if err := emps.BulkWrite(b.ctx, items, &repo.BulkOptions{Mode: repo.BulkInsert}); err != nil {
		t.Fatal(err)
	}
	st := model.Stats()
	for part, n := range st.PartitionMaxInFlight {
		if n > defaultPartitionConcurrency {
			t.Errorf("partition %s had %d transactions in flight at once, want at most %d", part, n, defaultPartitionConcurrency)
		}
	}
	hotSec := st.PartitionSeconds[hot]
	if st.Partitions[hot].RefusedRequests == 0 {
		t.Fatalf("the hot partition was never refused: the model did not throttle it (%v)", hotSec)
	}
	lastHot := len(hotSec) - 1 // the second of its last admission
	for p := 1; p <= cold; p++ {
		part := fmt.Sprintf("D%03d", p)
		if c := st.Partitions[part]; c.AdmittedEntities != coldN {
			t.Fatalf("partition %s: %d entities admitted, want %d", part, c.AdmittedEntities, coldN)
		}
		if last := len(st.PartitionSeconds[part]) - 1; last >= lastHot {
			t.Errorf("cold partition %s was still written in second %d, when the hot one ended (second %d): it waited behind the hot one or at its pace",
				part, last, lastHot)
		}
	}
	sent := st.Total.AdmittedRequests + st.Total.RefusedRequests
	t.Logf("%d requests sent for %d admitted (%.2fx) in %d s; in flight per partition: %v", sent, st.Total.AdmittedRequests,
		float64(sent)/float64(st.Total.AdmittedRequests), len(st.Seconds), st.PartitionMaxInFlight)
	checkRetryStorm(t, sent, st.Total.AdmittedRequests, stormBound)
	checkStoredOnce(t, b, items)
}

func TestOptionsRefusePartitionConcurrencyBelowOne(t *testing.T) {
	var ie *repo.InvalidInputError
	if err := repo.CheckOptions[Employee](&repo.Options{PartitionConcurrency: -1}); !errors.As(err, &ie) || ie.Field != "Options.PartitionConcurrency" {
		t.Fatalf("PartitionConcurrency -1: %v, want an InvalidInputError naming Options.PartitionConcurrency", err)
	}
}
