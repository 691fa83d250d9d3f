package repo_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
	"github.com/tablepatterns/tablepatterns/internal/testenv"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/repo/account"
)

// The throughput model of the throttled benchmarks: the published targets scaled by 1/10
// (200 entities/s per partition, 2,000 per account), so that Azurite, at several
// thousand entities/s in transactions of 100, is never the bottleneck; the ratio of the two
// targets is the published one.
const (
	benchPartitionRate = faultproxy.PartitionTarget / 10
	benchAccountRate   = faultproxy.AccountTarget / 10
)

// throttledBulk runs BulkWrite of the entities layout(op) returns through the model, one
// write per operation on freshly filled buckets, and reports for each the ratio of
// the time the model bounds it to (ceiling(entities)) to the time it took, and the
// requests sent per request the model admitted.
func throttledBulk(b *testing.B, formula string, layout func(op int) []*Employee, ceiling func(items []*Employee) time.Duration) {
	ps := testenv.Proxies(b)
	clients, err := account.NewClients(ps.ConnectionString, nil)
	if err != nil {
		b.Fatal(err)
	}
	name := testenv.TableName(b)
	testenv.Table(b, name)
	model, err := ps.Table.EmulateThrottling(&faultproxy.ThrottleOptions{PartitionRate: benchPartitionRate, AccountRate: benchAccountRate})
	if err != nil {
		b.Fatal(err)
	}
	emps, err := repo.New[Employee](clients.Tables, name, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("model: %d entities/s per partition, %d per account; %s", benchPartitionRate, benchAccountRate, formula)
	var ratio, sentPerAdmitted, entities float64
	var elapsed time.Duration
	b.ResetTimer()
	for op := 0; op < b.N; op++ {
		b.StopTimer()
		items := layout(op)
		model.Reset()
		b.StartTimer()
		start := time.Now()
		if err := emps.BulkWrite(b.Context(), items, &repo.BulkOptions{Mode: repo.BulkInsert}); err != nil {
			b.Fatal(err)
		}
		took := time.Since(start)
		b.StopTimer()
		st := model.Stats()
		if st.Total.AdmittedEntities != int64(len(items)) {
			b.Fatalf("the model admitted %d entities, want %d", st.Total.AdmittedEntities, len(items))
		}
		ratio += ceiling(items).Seconds() / took.Seconds()
		sentPerAdmitted += float64(st.Total.AdmittedRequests+st.Total.RefusedRequests) / float64(st.Total.AdmittedRequests)
		entities += float64(len(items))
		elapsed += took
		b.Logf("op %d: %d entities in %v (bound %v): ratio %.2f; %d requests sent, %d admitted", op, len(items), took.Round(time.Millisecond),
			ceiling(items), ceiling(items).Seconds()/took.Seconds(), st.Total.AdmittedRequests+st.Total.RefusedRequests, st.Total.AdmittedRequests)
		b.StartTimer()
	}
	n := float64(b.N)
	b.ReportMetric(ratio/n, "ratio-ceiling")
	b.ReportMetric(sentPerAdmitted/n, "ratio-sent-admitted")
	b.ReportMetric(entities/elapsed.Seconds(), "entities/s")
}

// BenchmarkBulkThrottledUniform writes 10 partitions of 1,000 entities with one BulkWrite
// under the model. Its ceiling is the account's 2,000 entities/s (ten partitions at 200
// reach it too) over the one operation an entity costs: 5 s. Run it with -benchtime=3x.
func BenchmarkBulkThrottledUniform(b *testing.B) {
	const partitions, perPartition = 10, 1000
	throttledBulk(b, "ratio-ceiling = (entities / min(account rate, partitions x partition rate) / 1 operation per entity) / time",
		func(op int) []*Employee {
			items := make([]*Employee, 0, partitions*perPartition)
			for p := range partitions {
				for i := range perPartition {
					items = append(items, employee(fmt.Sprintf("U%d-%02d", op, p), fmt.Sprintf("%05d", i)))
				}
			}
			return items
		},
		func(items []*Employee) time.Duration {
			rate := min(benchAccountRate, partitions*benchPartitionRate)
			return time.Duration(float64(len(items)) / float64(rate) * float64(time.Second))
		})
}

// BenchmarkBulkThrottledHotCold writes one hot partition of 4,000 entities and 12 cold ones
// of 500 with one BulkWrite under the model. The hot partition alone bounds it: 4,000
// entities at 200/s, 20 s; the cold ones fit beside it within the account's rate. Run it
// with -benchtime=1x.
func BenchmarkBulkThrottledHotCold(b *testing.B) {
	const hot, cold, perCold = 4000, 12, 500
	throttledBulk(b, "ratio-ceiling = (hot partition's entities / partition rate / 1 operation per entity) / time",
		func(op int) []*Employee {
			items := make([]*Employee, 0, hot+cold*perCold)
			for i := range hot {
				items = append(items, employee(fmt.Sprintf("H%d-hot", op), fmt.Sprintf("%05d", i)))
			}
			for p := range cold {
				for i := range perCold {
					items = append(items, employee(fmt.Sprintf("H%d-cold%02d", op, p), fmt.Sprintf("%05d", i)))
				}
			}
			return items
		},
		func([]*Employee) time.Duration {
			return time.Duration(float64(hot) / float64(benchPartitionRate) * float64(time.Second))
		})
}
