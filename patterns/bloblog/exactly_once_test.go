package bloblog_test

import (
	"errors"
	"testing"
	"time"

	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
	"github.com/tablepatterns/tablepatterns/patterns/bloblog"
	"github.com/tablepatterns/tablepatterns/repo"
)

// Lost responses of appends and creates, a service busy until the retries run out, and an
// append whose outcome stays unknown: every record is stored once, none twice, none lost.
func TestFaultsStoreEachRecordExactlyOnce(t *testing.T) {
	t.Parallel()
	write := func(t *testing.T, b *bed, w *bloblog.Writer, n int, tag string) []bloblog.Record {
		t.Helper()
		var out []bloblog.Record
		for i := 0; i < n; i++ {
			r := rec(t0.Add(time.Duration(i)*time.Second), "%s %d", tag, i)
			if err := w.Write(b.ctx, r); err != nil {
				t.Fatal(err)
			}
			out = append(out, r)
		}
		return out
	}
	isAppend := faultproxy.QueryContains("comp=appendblock")
	isCreate := faultproxy.All(faultproxy.IsPutBlob, faultproxy.HeaderIs("x-ms-blob-type", "AppendBlob"))

	t.Run("lost append response", func(t *testing.T) {
		t.Parallel()
		b := setup(t, true, true)
		b.proxy.AddRule(faultproxy.Rule{Name: "lost", Match: isAppend, Times: 1, Action: faultproxy.DropAfterForward()})
		w := b.writer("f", &bloblog.Options{FlushInterval: -1})
		want := write(t, b, w, 50, "a")
		if err := w.Close(b.ctx); err != nil {
			t.Fatal(err)
		}
		if b.proxy.Fired("lost") != 1 {
			t.Fatal("the fault did not fire")
		}
		exactlyOnce(t, b.readAll(b.reader(nil), "f", t0, t0.Add(time.Hour)), want)
	})

	t.Run("lost create response", func(t *testing.T) {
		t.Parallel()
		b := setup(t, true, true)
		b.proxy.AddRule(faultproxy.Rule{Name: "lost", Match: isCreate, Times: 1, Action: faultproxy.DropAfterForward()})
		w := b.writer("f", &bloblog.Options{FlushInterval: -1})
		want := write(t, b, w, 20, "c")
		if err := w.Close(b.ctx); err != nil {
			t.Fatal(err)
		}
		if b.proxy.Fired("lost") != 1 || len(b.names()) != 1 {
			t.Fatalf("fired %d, blobs %q", b.proxy.Fired("lost"), b.names())
		}
		exactlyOnce(t, b.readAll(b.reader(nil), "f", t0, t0.Add(time.Hour)), want)
	})

	t.Run("service busy until retries run out", func(t *testing.T) {
		t.Parallel()
		b := setup(t, true, true)
		w := b.writer("f", &bloblog.Options{FlushInterval: -1})
		want := write(t, b, w, 30, "b")
		remove := b.proxy.AddRule(faultproxy.Rule{Name: "busy", Match: isAppend, Action: faultproxy.Respond(503, "ServerBusy")})
		if err := w.Flush(b.ctx); !errors.Is(err, repo.ErrTransient) {
			t.Fatalf("flush against a busy service: %v", err)
		}
		if w.Stats().Buffered == 0 {
			t.Fatal("a failed flush dropped its records")
		}
		remove()
		want = append(want, write(t, b, w, 5, "more")...)
		if err := w.Close(b.ctx); err != nil {
			t.Fatal(err)
		}
		exactlyOnce(t, b.readAll(b.reader(nil), "f", t0, t0.Add(time.Hour)), want)
	})

	// Every try of an append reaches the service but loses its response: the outcome stays
	// unknown when the retries run out. The next flush finds the block stored and does not
	// send it again.
	t.Run("append outcome unknown", func(t *testing.T) {
		t.Parallel()
		b := setup(t, true, true)
		w := b.writer("f", &bloblog.Options{FlushInterval: -1})
		want := write(t, b, w, 40, "u")
		remove := b.proxy.AddRule(faultproxy.Rule{Name: "lost", Match: faultproxy.Any(isAppend, faultproxy.MethodIs("HEAD")), Action: faultproxy.DropAfterForward()})
		if err := w.Flush(b.ctx); err == nil {
			t.Fatal("flush without a single response succeeded")
		}
		remove()
		want = append(want, write(t, b, w, 3, "next")...)
		if err := w.Close(b.ctx); err != nil {
			t.Fatal(err)
		}
		exactlyOnce(t, b.readAll(b.reader(nil), "f", t0, t0.Add(time.Hour)), want)
	})
}
