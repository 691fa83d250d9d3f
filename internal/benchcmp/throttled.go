package benchcmp

import (
	"testing"
	"time"

	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
)

// The throughput model of the throttled benchmarks: the published targets scaled by 1/10
// (200 entities/s per partition, 2,000 per account), so that Azurite, at several
// thousand entities/s in transactions of 100, is not the bottleneck; the ratio of the two
// targets is the published one.
const (
	ThrottledPartitionRate = faultproxy.PartitionTarget / 10
	ThrottledAccountRate   = faultproxy.AccountTarget / 10
)

// Throttled is one bulk path measured against the throughput model.
type Throttled struct {
	// Formula is the ceiling's formula, logged once.
	Formula string
	// Prepare readies operation i (untimed, before the model's buckets are filled).
	Prepare func(i int) error
	// Op runs operation i through the model.
	Op func(i int) error
	// Bound is the time the model bounds operation i to: the ceiling (the model's
	// admitted entity operations per second over the operations one entity costs on the
	// path) applied to the operation's entities.
	Bound func(i int) time.Duration
}

// RunThrottled runs b.N operations of p through model, each on freshly filled buckets,
// and reports ratio-ceiling (the bound over the time each took, averaged),
// ratio-sent-admitted (requests the model judged over those it admitted) and the
// entity operations the model admitted per second.
func RunThrottled(b *testing.B, model *faultproxy.Throttle, p Throttled) {
	b.Helper()
	b.Logf("model: %d entities/s per partition, %d per account; %s", ThrottledPartitionRate, ThrottledAccountRate, p.Formula)
	var ratio, sentPerAdmitted, admitted float64
	var elapsed time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		if p.Prepare != nil {
			if err := p.Prepare(i); err != nil {
				b.Fatal(err)
			}
		}
		model.Reset()
		b.StartTimer()
		start := time.Now()
		if err := p.Op(i); err != nil {
			b.Fatal(err)
		}
		took := time.Since(start)
		b.StopTimer()
		st := model.Stats()
		if st.Total.AdmittedRequests == 0 {
			b.Fatal("the model admitted nothing: the path did not run through it")
		}
		bound := p.Bound(i)
		sent := st.Total.AdmittedRequests + st.Total.RefusedRequests
		ratio += bound.Seconds() / took.Seconds()
		sentPerAdmitted += float64(sent) / float64(st.Total.AdmittedRequests)
		admitted += float64(st.Total.AdmittedEntities)
		elapsed += took
		b.Logf("op %d: %v (bound %v): ratio %.2f; %d requests sent, %d admitted (%d entity operations)", i, took.Round(time.Millisecond),
			bound.Round(time.Millisecond), bound.Seconds()/took.Seconds(), sent, st.Total.AdmittedRequests, st.Total.AdmittedEntities)
		b.StartTimer()
	}
	n := float64(b.N)
	b.ReportMetric(ratio/n, "ratio-ceiling")
	b.ReportMetric(sentPerAdmitted/n, "ratio-sent-admitted")
	b.ReportMetric(admitted/elapsed.Seconds(), "entity-ops/s")
}

// Seconds returns n entity operations at rate per second as a duration.
func Seconds(n, rate float64) time.Duration {
	return time.Duration(n / rate * float64(time.Second))
}
