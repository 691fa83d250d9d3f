package app

import (
	"fmt"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tablepatterns/tablepatterns/patterns/tablearchive"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// lockedBuilder is a strings.Builder safe for the printer and the test.
type lockedBuilder struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuilder) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuilder) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// printerAt returns a printer on a clock the test moves, writing human lines to human
// (nil: logs to the returned observer).
func printerAt(human *lockedBuilder, every time.Duration) (*progressPrinter, *time.Time, *observer.ObservedLogs) {
	core, logs := observer.New(zapcore.InfoLevel)
	clock := time.Date(2026, 11, 24, 1, 0, 0, 0, time.UTC)
	p := &progressPrinter{logger: zap.New(core), every: every, now: func() time.Time { return clock }, jobs: map[string]*jobProgress{}}
	if human != nil {
		p.human = human
	}
	return p, &clock, logs
}

// On a terminal: a job shorter than the interval prints nothing; a long one prints one
// line per interval with its count, rate, elapsed time and (for a restore) the share done
// and the time left, then a last line.
func TestProgressHumanLines(t *testing.T) {
	t.Parallel()
	var out lockedBuilder
	p, clock, logs := printerAt(&out, 2*time.Second)
	started := *clock
	r := tablearchive.Progress{Job: tablearchive.KindRestoreTable, Phase: tablearchive.PhaseRestore, Table: "SignIns20240601", Generation: "g1", Total: 120000, Started: started}

	short := tablearchive.Progress{Job: tablearchive.KindArchiveTable, Phase: tablearchive.PhaseExport, Table: "Short", Generation: "g2", Started: started}
	p.report(short)
	short.Entities, short.Done = 10, true
	p.report(short)

	p.report(r) // starts the clock
	*clock = started.Add(time.Second)
	r.Entities = 3000
	p.report(r) // within the interval: nothing
	*clock = started.Add(16 * time.Second)
	r.Entities = 50000
	p.report(r)
	*clock = started.Add(40 * time.Second)
	r.Entities, r.Done = 120000, true
	p.report(r)

	want := "restore-table SignIns20240601: restore 50,000 of 120,000 entities (41%), 3,125/s, 16s elapsed, about 22s left\n" +
		"restore-table SignIns20240601: restore done: 120,000 entities in 40s (3,000/s)\n"
	if got := out.String(); got != want {
		t.Fatalf("terminal output:\n%s\nwant:\n%s", got, want)
	}
	if logs.Len() != 0 {
		t.Fatalf("a terminal got log entries too: %v", logs.All())
	}
	// The restore is over; the export's job goes on with its verify phase.
	if _, ok := p.jobs[tablearchive.KindRestoreTable+"\x00SignIns20240601"]; ok || len(p.jobs) != 1 {
		t.Fatalf("finished jobs are remembered: %v", p.jobs)
	}
}

// Not on a terminal: structured entries "progress" with the job's fields.
func TestProgressLogEntries(t *testing.T) {
	t.Parallel()
	p, clock, logs := printerAt(nil, 30*time.Second)
	started := *clock
	r := tablearchive.Progress{Job: tablearchive.KindArchiveTable, Phase: tablearchive.PhaseExport, Table: "SignIns20240601", Generation: "g1", Started: started}
	p.report(r)
	*clock = started.Add(30 * time.Second)
	r.Entities = 90000
	p.report(r)
	*clock = started.Add(45 * time.Second)
	r.Entities, r.Done = 120000, true
	p.report(r)
	entries := logs.FilterMessage("progress").All()
	if len(entries) != 2 {
		t.Fatalf("%d progress entries, want 2: %v", len(entries), logs.All())
	}
	for i, want := range []map[string]any{
		{"job": "archive-table", "phase": "export", "table": "SignIns20240601", "generation": "g1", "entities": int64(90000), "total": int64(0), "perSecond": 3000.0, "elapsed": 30 * time.Second, "done": false},
		{"job": "archive-table", "phase": "export", "table": "SignIns20240601", "generation": "g1", "entities": int64(120000), "total": int64(0), "perSecond": 2666.6, "elapsed": 45 * time.Second, "done": true},
	} {
		got := entries[i].ContextMap()
		for k, v := range want {
			if got[k] != v {
				t.Errorf("entry %d: %s = %#v, want %#v (%v)", i, k, got[k], v, got)
			}
		}
	}
}

// A job that fails reports no Done; the printer forgets it once it is stale.
func TestProgressForgetsFailedJobs(t *testing.T) {
	t.Parallel()
	p, clock, _ := printerAt(nil, time.Second)
	started := *clock
	p.report(tablearchive.Progress{Job: tablearchive.KindArchiveTable, Table: "Failed", Generation: "g1", Started: started})
	*clock = started.Add(11 * time.Minute)
	p.report(tablearchive.Progress{Job: tablearchive.KindArchiveTable, Table: "Next", Generation: "g2", Started: *clock})
	if _, ok := p.jobs[tablearchive.KindArchiveTable+"\x00Failed"]; ok || len(p.jobs) != 1 {
		t.Fatalf("jobs remembered: %v", p.jobs)
	}
}

func TestProgressFlag(t *testing.T) {
	t.Parallel()
	var f progressFlag
	if f.String() != "auto" {
		t.Fatalf("zero flag %q", f.String())
	}
	for _, bad := range []string{"0s", "-1s", "soon", ""} {
		if err := f.Set(bad); err == nil {
			t.Errorf("-progress %q accepted", bad)
		}
	}
	if err := f.Set("off"); err != nil || f.reporter(&lockedBuilder{}, zap.NewNop()) != nil {
		t.Fatalf("-progress off: %v", err)
	}
	if err := f.Set("5s"); err != nil || f.String() != "5s" {
		t.Fatalf("-progress 5s: %v %q", err, f.String())
	}
}

func TestThousands(t *testing.T) {
	t.Parallel()
	for n, want := range map[int64]string{0: "0", 999: "999", 1000: "1,000", 120000: "120,000", 1234567: "1,234,567", -4500: "-4,500"} {
		if got := thousands(n); got != want {
			t.Errorf("thousands(%d) = %q, want %q", n, got, want)
		}
	}
}

// The worker runs jobs concurrently: reports of 16 jobs at once keep each job's lines
// whole and its own (run with -race).
func TestProgressConcurrentJobs(t *testing.T) {
	t.Parallel()
	var out lockedBuilder
	p := &progressPrinter{human: &out, logger: zap.NewNop(), every: time.Nanosecond, now: time.Now, jobs: map[string]*jobProgress{}}
	var wg sync.WaitGroup
	for j := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := tablearchive.Progress{Job: tablearchive.KindRestoreTable, Phase: tablearchive.PhaseRestore, Table: fmt.Sprintf("Job%02d", j), Generation: "g", Total: 200, Started: time.Now()}
			for i := range 200 {
				r.Entities, r.Done = int64(i+1), i == 199
				p.report(r)
			}
		}()
	}
	wg.Wait()
	line := regexp.MustCompile(`^restore-table Job[0-9]{2}: restore ([0-9,]+ of 200 entities \([0-9]+%\), [0-9,]+/s, [0-9.a-zµ]+ elapsed(, about [0-9.a-zµ]+ left)?|done: 200 entities in [0-9.a-zµ]+ \([0-9,]+/s\))$`)
	done := 0
	for _, l := range strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n") {
		if !line.MatchString(l) {
			t.Fatalf("garbled line %q", l)
		}
		if strings.Contains(l, "done: 200") {
			done++
		}
	}
	if done != 16 || len(p.jobs) != 0 {
		t.Fatalf("%d jobs reported done, %d remembered; want 16 and 0", done, len(p.jobs))
	}
}
