package bloblog_test

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tablepatterns/tablepatterns/patterns/bloblog"
	"github.com/tablepatterns/tablepatterns/patterns/internal/testbed"
	"github.com/tablepatterns/tablepatterns/repo"
)

// Records written out of order within their hour are stored in blobs named by the hour
// and read back by time range, in time order, exactly those of the range.
func TestWriteReadRange(t *testing.T) {
	t.Parallel()
	b := setup(t, false, true)
	w := b.writer("queue", &bloblog.Options{FlushInterval: -1})
	var all []bloblog.Record
	// Three hours of records, one every 90 s, written out of order within each hour.
	for h := 0; h < 3; h++ {
		for m := 39; m >= 0; m-- {
			r := rec(t0.Add(time.Duration(h)*time.Hour+time.Duration(m)*90*time.Second), "h%d m%02d", h, m)
			all = append(all, r)
			if err := w.Write(b.ctx, r); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := w.Close(b.ctx); err != nil {
		t.Fatal(err)
	}
	names := b.names()
	want := []string{"queue/2014/07/31/1800/000001.log", "queue/2014/07/31/1900/000001.log", "queue/2014/07/31/2000/000001.log"}
	if !slices.Equal(names, want) {
		t.Fatalf("blob names %q, want %q", names, want)
	}
	props, err := b.raw.NewBlobClient(want[0]).GetProperties(b.ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	meta := map[string]string{}
	for k, v := range props.Metadata { // the SDK canonicalizes header names: compare without case
		meta[strings.ToLower(k)] = *v
	}
	if meta["starttime"] != "2014-07-31T18:00:00.0000000Z" || meta["endtime"] != "2014-07-31T18:58:30.0000000Z" {
		t.Fatalf("metadata %v", props.Metadata)
	}

	r := b.reader(nil)
	// The guide's example: 15:04 to 15:06 of one day (here 18:04 to 18:06).
	from, to := t0.Add(4*time.Minute), t0.Add(6*time.Minute)
	got := b.readAll(r, "queue", from, to)
	var expect []bloblog.Record
	for _, x := range all {
		if !x.Time.Before(from) && x.Time.Before(to) {
			expect = append(expect, x)
		}
	}
	slices.SortFunc(expect, func(a, b bloblog.Record) int { return a.Time.Compare(b.Time) })
	if len(got) != len(expect) || len(got) == 0 {
		t.Fatalf("read %d records of 18:04-18:06, want %d", len(got), len(expect))
	}
	for i := range got {
		if !got[i].Time.Equal(expect[i].Time) || !bytes.Equal(got[i].Data, expect[i].Data) {
			t.Fatalf("record %d: %v %q, want %v %q", i, got[i].Time, got[i].Data, expect[i].Time, expect[i].Data)
		}
	}
	// A range across hours returns them in time order, every record once.
	span := b.readAll(r, "queue", t0.Add(30*time.Minute), t0.Add(150*time.Minute))
	if !slices.IsSortedFunc(span, func(a, b bloblog.Record) int { return a.Time.Compare(b.Time) }) {
		t.Fatal("records out of time order")
	}
	if len(span) != 80 {
		t.Fatalf("18:30-20:30 holds %d records, want 80", len(span))
	}
	if got := b.readAll(r, "other", t0, t0.Add(3*time.Hour)); len(got) != 0 {
		t.Fatalf("another source returned %d records", len(got))
	}
}

// Blobs whose metadata range misses the query are skipped without downloading.
func TestListSkipsByMetadata(t *testing.T) {
	t.Parallel()
	b := setup(t, false, true)
	early, late := b.writer("web", &bloblog.Options{FlushInterval: -1}), b.writer("web", &bloblog.Options{FlushInterval: -1})
	for m := 0; m < 10; m++ {
		if err := early.Write(b.ctx, rec(t0.Add(time.Duration(m)*time.Minute), "early %d", m)); err != nil {
			t.Fatal(err)
		}
		if err := late.Write(b.ctx, rec(t0.Add(time.Duration(50+m)*time.Minute), "late %d", m)); err != nil {
			t.Fatal(err)
		}
	}
	if err := early.Close(b.ctx); err != nil {
		t.Fatal(err)
	}
	if err := late.Close(b.ctx); err != nil {
		t.Fatal(err)
	}
	if n := len(b.names()); n != 2 {
		t.Fatalf("two writers share %d blobs, want one each", n)
	}
	r := b.reader(nil)
	blobs, err := r.List(b.ctx, "web", t0.Add(45*time.Minute), t0.Add(55*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if len(blobs) != 1 || !blobs[0].First.Equal(t0.Add(50*time.Minute)) || !blobs[0].Last.Equal(t0.Add(59*time.Minute)) {
		t.Fatalf("listed %+v, want only the late writer's blob", blobs)
	}
	if got := b.readAll(r, "web", t0.Add(45*time.Minute), t0.Add(55*time.Minute)); len(got) != 5 || string(got[0].Data) != "late 0" {
		t.Fatalf("read %d records", len(got))
	}
}

// Periods shorter than an hour get a blob directory each, and readers of either period
// read the same records.
func TestShortPeriods(t *testing.T) {
	t.Parallel()
	b := setup(t, false, true)
	w := b.writer("svc", &bloblog.Options{Period: 15 * time.Minute, FlushInterval: -1})
	var all []bloblog.Record
	for m := 0; m < 90; m += 5 {
		r := rec(t0.Add(time.Duration(m)*time.Minute), "m%d", m)
		all = append(all, r)
		if err := w.Write(b.ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(b.ctx); err != nil {
		t.Fatal(err)
	}
	if n := len(b.names()); n != 6 {
		t.Fatalf("%d blobs for 90 minutes of 15-minute periods, want 6: %q", n, b.names())
	}
	// A reader of 15-minute periods, and one of the default hour, read the same records.
	for _, p := range []time.Duration{15 * time.Minute, 0} {
		got := b.readAll(b.reader(&bloblog.ReaderOptions{Period: p}), "svc", t0.Add(20*time.Minute), t0.Add(70*time.Minute))
		if len(got) != 10 || !got[0].Time.Equal(t0.Add(20*time.Minute)) || !got[9].Time.Equal(t0.Add(65*time.Minute)) {
			t.Fatalf("period %v: read %d records from %v", p, len(got), got)
		}
	}
}

// A reader of 10-minute periods reads the records of a one-hour writer in the second half
// of its hour (the blob's period is the writer's, not the reader's), and ends inside a
// 100 ns tick round the right way.
func TestShortReaderPeriodReadsHourWriters(t *testing.T) {
	t.Parallel()
	b := setup(t, false, true)
	w := b.writer("hr", &bloblog.Options{FlushInterval: -1}) // one-hour periods
	for _, m := range []int{5, 35, 50} {
		if err := w.Write(b.ctx, rec(t0.Add(time.Duration(m)*time.Minute), "m%d", m)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(b.ctx); err != nil {
		t.Fatal(err)
	}
	r := b.reader(&bloblog.ReaderOptions{Period: 10 * time.Minute})
	got := b.readAll(r, "hr", t0.Add(30*time.Minute), t0.Add(time.Hour))
	if len(got) != 2 || !got[0].Time.Equal(t0.Add(35*time.Minute)) {
		t.Fatalf("read %v, want the records at :35 and :50", got)
	}
	at := t0.Add(35 * time.Minute)
	half := 50 * time.Nanosecond
	if got := b.readAll(r, "hr", at.Add(-time.Minute), at.Add(half)); len(got) != 1 {
		t.Fatalf("a to inside the record's tick: %v, want the record", got)
	}
	if got := b.readAll(r, "hr", at.Add(half), at.Add(time.Minute)); len(got) != 0 {
		t.Fatalf("a from inside the record's tick: %v, want nothing", got)
	}
}

// A blob that reaches MaxBlobBytes is closed and the period's next one (NNNNNN+1) takes
// the following records, in order.
func TestRollover(t *testing.T) {
	t.Parallel()
	b := setup(t, false, true)
	w := b.writer("big", &bloblog.Options{FlushInterval: -1, FlushBytes: 1000, MaxBlobBytes: 2000})
	var all []bloblog.Record
	for i := 0; i < 100; i++ {
		r := rec(t0.Add(time.Duration(i)*time.Second), "record %03d %s", i, strings.Repeat("x", 40))
		all = append(all, r)
		if err := w.Write(b.ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(b.ctx); err != nil {
		t.Fatal(err)
	}
	names := b.names()
	if len(names) < 3 || names[0] != "big/2014/07/31/1800/000001.log" || names[2] != "big/2014/07/31/1800/000003.log" {
		t.Fatalf("no rollover: %q", names)
	}
	got := b.readAll(b.reader(nil), "big", t0, t0.Add(time.Hour))
	for i := range got {
		if !bytes.Equal(got[i].Data, all[i].Data) {
			t.Fatalf("record %d: %q, want %q", i, got[i].Data, all[i].Data)
		}
	}
	if len(got) != len(all) {
		t.Fatalf("read %d of %d", len(got), len(all))
	}
}

// The writer flushes when FlushBytes are buffered and every FlushInterval.
func TestFlushOnSizeAndInterval(t *testing.T) {
	t.Parallel()
	t.Run("size", func(t *testing.T) {
		t.Parallel()
		b := setup(t, false, true)
		w := b.writer("s", &bloblog.Options{FlushInterval: -1, FlushBytes: 500})
		for i := 0; i < 4; i++ { // under FlushBytes: stays buffered
			if err := w.Write(b.ctx, rec(t0, "%d %s", i, strings.Repeat("y", 50))); err != nil {
				t.Fatal(err)
			}
		}
		if n := len(b.names()); n != 0 || w.Stats().Buffered == 0 {
			t.Fatalf("flushed before FlushBytes: %d blobs, %+v", n, w.Stats())
		}
		for i := 4; i < 10; i++ {
			if err := w.Write(b.ctx, rec(t0, "%d %s", i, strings.Repeat("y", 50))); err != nil {
				t.Fatal(err)
			}
		}
		testbed.WaitFor(t, "a flush on size", func() bool { return w.Stats().Appends > 0 })
	})
	t.Run("interval", func(t *testing.T) {
		t.Parallel()
		b := setup(t, false, true)
		w := b.writer("i", &bloblog.Options{FlushInterval: 50 * time.Millisecond})
		if err := w.Write(b.ctx, rec(t0, "one small record")); err != nil {
			t.Fatal(err)
		}
		testbed.WaitFor(t, "a flush on interval", func() bool { return len(b.names()) == 1 && w.Stats().Buffered == 0 })
	})
}

// Many goroutines write while the writer flushes in the background; Close loses nothing.
func TestConcurrentWritersAndClose(t *testing.T) {
	t.Parallel()
	b := setup(t, false, true)
	w := b.writer("app", &bloblog.Options{FlushBytes: 4 << 10, FlushInterval: 20 * time.Millisecond, MaxBuffered: 16 << 10})
	const goroutines, each = 8, 300
	all := make([][]bloblog.Record, goroutines)
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				r := rec(t0.Add(time.Duration(i)*time.Second), "g%d i%d", g, i)
				if err := w.Write(b.ctx, r); err != nil {
					t.Error(err)
					return
				}
				all[g] = append(all[g], r)
			}
		}()
	}
	wg.Wait()
	if err := w.Close(b.ctx); err != nil {
		t.Fatal(err)
	}
	if err := w.Write(b.ctx, rec(t0, "late")); !errors.Is(err, bloblog.ErrClosed) {
		t.Fatalf("write after close: %v", err)
	}
	got := b.readAll(b.reader(nil), "app", t0, t0.Add(time.Hour))
	exactlyOnce(t, got, slices.Concat(all...))
	// Each goroutine's records keep their order (equal times are not reordered).
	if s := w.Stats(); s.Records != goroutines*each || s.Buffered != 0 || s.Flushes < 2 {
		t.Fatalf("stats %+v", s)
	}
}

// A full buffer blocks Write until a flush makes room; records are not dropped meanwhile.
func TestBackpressure(t *testing.T) {
	t.Parallel()
	b := setup(t, false, false) // no container yet: every flush fails
	w := b.writer("bp", &bloblog.Options{FlushInterval: -1, FlushBytes: 200, MaxBuffered: 400})
	var written []bloblog.Record
	for i := 0; ; i++ {
		r := rec(t0.Add(time.Duration(i)*time.Second), "%03d %s", i, strings.Repeat("z", 30))
		ctx, cancel := context.WithTimeout(b.ctx, 200*time.Millisecond)
		err := w.Write(ctx, r)
		cancel()
		if errors.Is(err, context.DeadlineExceeded) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		written = append(written, r)
		if i > 100 {
			t.Fatal("Write never blocked on a full buffer")
		}
	}
	if err := w.Flush(b.ctx); !errors.Is(err, repo.ErrNotFound) {
		t.Fatalf("flush into a missing container: %v", err)
	}
	if _, err := b.raw.Create(b.ctx, nil); err != nil {
		t.Fatal(err)
	}
	last := rec(t0.Add(time.Hour-time.Second), "after the container exists")
	if err := w.Write(b.ctx, last); err != nil { // blocks until a background flush succeeds
		t.Fatal(err)
	}
	written = append(written, last)
	if err := w.Close(b.ctx); err != nil {
		t.Fatal(err)
	}
	exactlyOnce(t, b.readAll(b.reader(nil), "bp", t0, t0.Add(time.Hour)), written)
}

// Bad input is refused before any request.
func TestInvalidInput(t *testing.T) {
	t.Parallel()
	b := setup(t, true, true)
	w := b.writer("ok", &bloblog.Options{FlushInterval: -1})
	r := b.reader(nil)
	mark := b.proxy.Count()
	checks := map[string]error{
		"zero time":    w.Write(b.ctx, bloblog.Record{Data: []byte("x")}),
		"year 10000":   w.Write(b.ctx, bloblog.Record{Time: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}),
		"huge record":  w.Write(b.ctx, bloblog.Record{Time: t0, Data: make([]byte, bloblog.MaxAppendBytes)}),
		"bad source":   second(bloblog.NewWriter(b.blobs, b.cname, "a//b", nil)),
		"dot source":   second(bloblog.NewWriter(b.blobs, b.cname, "a/../b", nil)),
		"container":    second(bloblog.NewWriter(b.blobs, "Logs", "a", nil)),
		"period":       second(bloblog.NewWriter(b.blobs, b.cname, "a", &bloblog.Options{Period: 7 * time.Minute})),
		"flush bytes":  second(bloblog.NewWriter(b.blobs, b.cname, "a", &bloblog.Options{FlushBytes: bloblog.MaxAppendBytes + 1})),
		"max buffered": second(bloblog.NewWriter(b.blobs, b.cname, "a", &bloblog.Options{FlushBytes: 100, MaxBuffered: 50})),
		"reader range": second(r.List(b.ctx, "ok", t0, t0)),
		"reader src":   second(r.List(b.ctx, "a b", t0, t0.Add(time.Hour))),
	}
	for name, err := range checks {
		if !errors.Is(err, repo.ErrInvalidInput) {
			t.Errorf("%s: %v, want ErrInvalidInput", name, err)
		}
	}
	for _, err := range r.Read(b.ctx, "ok", t0.Add(time.Hour), t0) {
		if !errors.Is(err, repo.ErrInvalidInput) {
			t.Errorf("read of an empty range: %v", err)
		}
	}
	if n := b.proxy.Count() - mark; n != 0 {
		t.Fatalf("%d requests sent for refused input", n)
	}
	if w.Stats().Buffered != 0 {
		t.Fatal("a refused record was buffered")
	}
}

func second[A any](_ A, err error) error { return err }

func TestRecordEncodingRoundTrips(t *testing.T) {
	t.Parallel()
	b := setup(t, false, true)
	w := b.writer("enc", &bloblog.Options{FlushInterval: -1})
	all := make([]byte, 256)
	for i := range all {
		all[i] = byte(i)
	}
	datas := [][]byte{nil, []byte("line1\nline2\r\n"), []byte(`back\slash \n literal`), []byte("tab\there"), all, []byte("日本語のログ")}
	var want []bloblog.Record
	for i, d := range datas {
		r := bloblog.Record{Time: t0.Add(time.Duration(i)*time.Second + 123456700), Data: d}
		want = append(want, r)
		if err := w.Write(b.ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(b.ctx); err != nil {
		t.Fatal(err)
	}
	got := b.readAll(b.reader(nil), "enc", t0, t0.Add(time.Minute))
	if len(got) != len(want) {
		t.Fatalf("%d records", len(got))
	}
	for i := range got {
		if !got[i].Time.Equal(want[i].Time) || !bytes.Equal(got[i].Data, want[i].Data) {
			t.Fatalf("record %d: %v %q, want %v %q", i, got[i].Time, got[i].Data, want[i].Time, want[i].Data)
		}
	}
}
