package testenv

import (
	"testing"

	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
)

// CheckSpread checks, from a throughput model's per-partition counts, what a bulk path
// that runs through retry.Schedule promises when one partition is hot: no partition had
// more than bound requests in flight at once, the hot partition was refused (else the
// test proves nothing: the model did not throttle it), and every cold partition's last
// admitted request came in an earlier second than the hot one's (the cold partitions
// kept being admitted beside the hot one, not behind it or at its pace). It logs the
// requests sent per request admitted.
func CheckSpread(t testing.TB, st faultproxy.ThrottleStats, bound int, hot string, colds []string) {
	t.Helper()
	for part, n := range st.PartitionMaxInFlight {
		if n > bound {
			t.Errorf("partition %q had %d requests in flight at once, want at most %d", part, n, bound)
		}
	}
	if st.Partitions[hot].RefusedRequests == 0 {
		t.Fatalf("the hot partition was never refused: the model did not throttle it (%v)", st.PartitionSeconds[hot])
	}
	lastHot := lastAdmitted(st.PartitionSeconds[hot])
	for _, part := range colds {
		if st.Partitions[part].AdmittedRequests == 0 {
			t.Errorf("cold partition %s: nothing admitted", part)
		}
		if last := lastAdmitted(st.PartitionSeconds[part]); last >= lastHot {
			t.Errorf("cold partition %s was still admitted in second %d, when the hot one ended (second %d): it waited behind the hot one or at its pace",
				part, last, lastHot)
		}
	}
	sent := st.Total.AdmittedRequests + st.Total.RefusedRequests
	t.Logf("%d requests sent for %d admitted (%.2fx) in %d s; hot partition: %d refused; in flight per partition: %v", sent, st.Total.AdmittedRequests,
		float64(sent)/float64(max(st.Total.AdmittedRequests, 1)), len(st.Seconds), st.Partitions[hot].RefusedRequests, st.PartitionMaxInFlight)
}

// lastAdmitted returns the last second in which a request was admitted, -1 if none.
func lastAdmitted(secs []faultproxy.Counts) int {
	for i := len(secs) - 1; i >= 0; i-- {
		if secs[i].AdmittedRequests > 0 {
			return i
		}
	}
	return -1
}
