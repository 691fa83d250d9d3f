package bloblog_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
	"github.com/tablepatterns/tablepatterns/internal/testenv"
	"github.com/tablepatterns/tablepatterns/patterns/bloblog"
	"github.com/tablepatterns/tablepatterns/patterns/internal/testbed"
)

func TestMain(m *testing.M) { testenv.Main(m) }

var fast = testbed.FastRetry()

// t0 is 2014-07-31 18:00 UTC, the guide's "queue/2014/07/31/1800/000001.log".
var t0 = time.Date(2014, 7, 31, 18, 0, 0, 0, time.UTC)

type bed struct {
	*testbed.Bed
	t     *testing.T
	ctx   context.Context
	blobs *azblob.Client // through the proxy when proxied
	raw   *container.Client
	proxy *faultproxy.Proxy
	cname string
}

// setup returns a bed with a fresh container name; create creates the container.
func setup(t *testing.T, proxied, create bool) *bed {
	t.Helper()
	tb := testbed.New(t, &testbed.Options{Proxied: proxied, NoTable: true})
	b := &bed{Bed: tb, t: t, ctx: tb.Ctx, blobs: tb.Clients.Blobs, cname: tb.Container(create)}
	if proxied {
		b.proxy = tb.Proxies.Blob
	}
	b.raw = tb.Direct.Blobs.ServiceClient().NewContainerClient(b.cname)
	return b
}

func (b *bed) writer(source string, o *bloblog.Options) *bloblog.Writer {
	b.t.Helper()
	if o == nil {
		o = &bloblog.Options{}
	}
	if o.Retry.Delay == 0 {
		o.Retry = fast
	}
	w, err := bloblog.NewWriter(b.blobs, b.cname, source, o)
	if err != nil {
		b.t.Fatal(err)
	}
	b.t.Cleanup(func() { _ = w.Close(context.Background()) })
	return w
}

func (b *bed) reader(o *bloblog.ReaderOptions) *bloblog.Reader {
	b.t.Helper()
	if o == nil {
		o = &bloblog.ReaderOptions{}
	}
	o.Retry = fast
	r, err := bloblog.NewReader(b.blobs, b.cname, o)
	if err != nil {
		b.t.Fatal(err)
	}
	return r
}

// names lists every blob name in the container.
func (b *bed) names() []string { return b.BlobNames(b.cname) }

// readAll reads source's records of [from, to).
func (b *bed) readAll(r *bloblog.Reader, source string, from, to time.Time) []bloblog.Record {
	b.t.Helper()
	var out []bloblog.Record
	for rec, err := range r.Read(b.ctx, source, from, to) {
		if err != nil {
			b.t.Fatal(err)
		}
		out = append(out, rec)
	}
	return out
}

func rec(at time.Time, format string, args ...any) bloblog.Record {
	return bloblog.Record{Time: at, Data: fmt.Appendf(nil, format, args...)}
}

// exactlyOnce checks that got holds every record of want once, whatever the order.
func exactlyOnce(t *testing.T, got, want []bloblog.Record) {
	t.Helper()
	key := func(r bloblog.Record) string { return r.Time.Format(time.RFC3339Nano) + "|" + string(r.Data) }
	g := make([]string, len(got))
	for i, r := range got {
		g[i] = key(r)
	}
	w := make([]string, len(want))
	for i, r := range want {
		w[i] = key(r)
	}
	slices.Sort(g)
	slices.Sort(w)
	if !slices.Equal(g, w) {
		t.Fatalf("read %d records, wrote %d (lost or duplicated records)", len(g), len(w))
	}
}
