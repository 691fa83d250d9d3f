package retry

import (
	"context"
	"math"
	"net/http"
	"testing"
	"time"
)

// inSchedule is a context of a Schedule's task in partition pk: marked with pk and
// carrying the Schedule's hints.
func inSchedule(t *testing.T, h *readyHints, pk string) context.Context {
	return WithPartition(context.WithValue(t.Context(), readyHintsKey{}, h), pk)
}

// Within one Schedule, the rate at which one partition met its limit paces the others before their
// first refusal: a partition that already sent waits an interval after its last request;
// a new one sends its first request at once and the next an interval later. Requests of
// another Schedule (or none) are not paced by it.
func TestGatePacesAScheduleAtTheRateOnePartitionLearnt(t *testing.T) {
	c := &fakeClock{t: time.Unix(1e9, 0)}
	g := gateAt(t, c)
	h := &readyHints{at: map[string]time.Time{}}
	sendThrough(t, g, inSchedule(t, h, "warm"), 2, http.MethodGet, entityURL("warm"), accepted)
	sendThrough(t, g, inSchedule(t, h, "hot"), 2, http.MethodGet, entityURL("hot"), accepted)
	sendThrough(t, g, inSchedule(t, h, "hot"), 2, http.MethodGet, entityURL("hot"), func(r *http.Request) *http.Response { return serverBusy(r, busyPartitionMessage) })
	learnt := g.PartitionRate("hot")
	if learnt <= 0 {
		t.Fatal("the busy partition has no rate")
	}
	if r := g.PartitionRate("warm"); r != 0 {
		t.Fatalf("warm partition limited to %v before it sent again", r)
	}
	// warm's next request is paced: it takes the learnt rate and waits an interval.
	warm := g.partition("warm")
	h.pace(warm)
	if r := g.PartitionRate("warm"); math.Abs(r-learnt/0.9) > 1e-9 {
		t.Fatalf("warm partition's rate %v, want the rate the hot one met its limit at, %v", r, learnt/0.9)
	}
	if d := warm.reserve(); d < time.Duration(float64(time.Second)/learnt)*8/10 {
		t.Fatalf("warm partition's next request waits %v, want about an interval at %.2f/s", d, learnt)
	}
	// A partition new to the Gate sends its first request at once, the next an interval on.
	fresh := g.partition("fresh")
	h.pace(fresh)
	if d := fresh.reserve(); d != 0 {
		t.Fatalf("a new partition's first request waits %v", d)
	}
	if d := fresh.reserve(); d <= 0 {
		t.Fatal("a new partition's second request is not paced")
	}
	// Another Schedule's hints hold no guess: its partitions are not paced.
	other := g.partition("other")
	(&readyHints{at: map[string]time.Time{}}).pace(other)
	if r := g.PartitionRate("other"); r != 0 {
		t.Fatalf("a partition of another Schedule limited to %v", r)
	}
	// The guess lapses Quiet after it was learnt.
	c.add(11 * time.Second)
	late := g.partition("late")
	h.pace(late)
	if r := g.PartitionRate("late"); r != 0 {
		t.Fatalf("a guess older than Quiet paced a partition at %v", r)
	}
}
