package app

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tablepatterns/tablepatterns/patterns/tablearchive"
	"go.uber.org/zap"
	"golang.org/x/term"
)

// Default intervals of -progress auto.
const (
	progressTerminal = 2 * time.Second
	progressLogs     = 30 * time.Second
)

// progressFlag is -progress: "auto" (the zero value), "off" or a positive duration.
type progressFlag struct {
	off   bool
	every time.Duration // 0: auto
}

func (f *progressFlag) String() string {
	switch {
	case f == nil || (!f.off && f.every == 0):
		return "auto"
	case f.off:
		return "off"
	}
	return f.every.String()
}

func (f *progressFlag) Set(v string) error {
	switch v {
	case "auto":
		*f = progressFlag{}
		return nil
	case "off":
		*f = progressFlag{off: true}
		return nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return fmt.Errorf("want auto, off or a positive duration (10s)")
	}
	*f = progressFlag{every: d}
	return nil
}

// reporter returns the consistency.Options.Progress of the flag: human lines on stderr
// when it is a terminal, zap Info entries "progress" otherwise; nil when off.
func (f *progressFlag) reporter(stderr io.Writer, logger *zap.Logger) func(tablearchive.Progress) {
	if f.off {
		return nil
	}
	p := &progressPrinter{logger: logger, now: time.Now, jobs: map[string]*jobProgress{}}
	if isTerminal(stderr) {
		p.human, p.every = stderr, progressTerminal
	} else {
		p.every = progressLogs
	}
	if f.every > 0 {
		p.every = f.every
	}
	return p.report
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// progressPrinter prints the progress of the table jobs that run long, phase by phase
// (tablearchive.Progress), in one shape: a phase's first report starts its clock, and
// the phase is reported every interval from then on, with a last report when it is done
// if it printed anything or lasted an interval. Once a job has printed, each of its
// next phases is announced as it starts, so that a long job never goes quiet between
// phases. Phases shorter than one interval print nothing.
type progressPrinter struct {
	human  io.Writer // nil: log entries
	logger *zap.Logger
	every  time.Duration
	now    func() time.Time

	mu   sync.Mutex
	jobs map[string]*jobProgress // by job and table
}

type jobProgress struct {
	phase      string    // the phase being reported, with its generation
	started    time.Time // when the printer first saw the phase
	last       time.Time // of the last report printed, or of the phase's start
	printed    bool      // of this phase
	jobPrinted bool      // of any phase of the job
}

// report is consistency.Options.Progress.
func (p *progressPrinter) report(r tablearchive.Progress) {
	key := r.Job + "\x00" + r.Table
	phase := r.Phase + "\x00" + r.Generation
	now := p.now()
	p.mu.Lock()
	defer p.mu.Unlock()
	j := p.jobs[key]
	if j == nil || j.phase != phase {
		if j == nil {
			p.forgetStale(now)
			j = &jobProgress{}
			p.jobs[key] = j
		}
		*j = jobProgress{phase: phase, started: now, last: now, jobPrinted: j.jobPrinted}
		if !r.Done && !j.jobPrinted {
			return
		}
		if r.Done && !j.jobPrinted {
			p.end(key, r)
			return // done at its first report: nothing ran long
		}
		// A long job's next phase: say that it started.
	} else if !r.Done && now.Sub(j.last) < p.every {
		return
	} else if r.Done && !j.printed && now.Sub(j.started) < p.every {
		p.end(key, r)
		return
	}
	j.last, j.printed, j.jobPrinted = now, true, true
	p.print(r, now)
	if r.Done {
		p.end(key, r)
	}
}

// end forgets a job after the Done of its last phase.
func (p *progressPrinter) end(key string, r tablearchive.Progress) {
	if r.Done && (r.Phase == tablearchive.PhaseDelete || r.Phase == tablearchive.PhaseRestore) {
		delete(p.jobs, key)
	}
}

// print writes one report: a line for a person, or an Info entry "progress" whose
// fields are the same for every job and phase.
func (p *progressPrinter) print(r tablearchive.Progress, now time.Time) {
	elapsed := max(now.Sub(r.Started), 0)
	rate := 0.0
	if elapsed > 0 {
		rate = float64(r.Entities) / elapsed.Seconds()
	}
	if p.human != nil {
		fmt.Fprintln(p.human, humanProgress(r, rate, elapsed))
		return
	}
	p.logger.Info("progress", zap.String("job", r.Job), zap.String("phase", r.Phase), zap.String("table", r.Table),
		zap.String("generation", r.Generation), zap.Int64("entities", r.Entities), zap.Int64("total", r.Total),
		zap.Float64("perSecond", float64(int64(rate*10))/10), zap.Duration("elapsed", elapsed.Round(time.Millisecond)), zap.Bool("done", r.Done))
}

// forgetStale drops the jobs that stopped reporting (they failed: a failed job reports
// no Done, and a job kept whole ends with its verify phase), so that a long-running
// worker does not accumulate them.
func (p *progressPrinter) forgetStale(now time.Time) {
	stale := max(10*p.every, 10*time.Minute)
	for k, j := range p.jobs {
		if now.Sub(j.last) > stale {
			delete(p.jobs, k)
		}
	}
}

// humanProgress is one line for a person at a terminal, in one shape for every phase:
//
//	restore-table SignIns20240601: restore 50,000 of 120,000 entities (41%), 3,100/s, 16s elapsed, about 23s left
//	restore-table SignIns20240601: restore done: 120,000 entities in 40s (3,000/s)
func humanProgress(r tablearchive.Progress, rate float64, elapsed time.Duration) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s: %s ", r.Job, r.Table, r.Phase)
	if r.Done {
		fmt.Fprintf(&b, "done: %s entities in %s (%s/s)", thousands(r.Entities), elapsed.Round(time.Second), thousands(int64(rate)))
		return b.String()
	}
	b.WriteString(thousands(r.Entities))
	if r.Total > 0 {
		fmt.Fprintf(&b, " of %s entities (%d%%)", thousands(r.Total), min(r.Entities*100/r.Total, 100))
	} else {
		b.WriteString(" entities")
	}
	fmt.Fprintf(&b, ", %s/s, %s elapsed", thousands(int64(rate)), elapsed.Round(time.Second))
	if r.Total > r.Entities && rate > 0 {
		left := time.Duration(float64(r.Total-r.Entities) / rate * float64(time.Second))
		fmt.Fprintf(&b, ", about %s left", left.Round(time.Second))
	}
	return b.String()
}

// thousands formats n with comma separators: 120000 is "120,000".
func thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	if neg {
		s = s[1:]
	}
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}
