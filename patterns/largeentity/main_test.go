package largeentity_test

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
	"github.com/tablepatterns/tablepatterns/internal/testenv"
	"github.com/tablepatterns/tablepatterns/patterns/internal/testbed"
	"github.com/tablepatterns/tablepatterns/patterns/largeentity"
	"github.com/tablepatterns/tablepatterns/repo"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// Employee is the guide's employee with a photo (the guide's "Large entities pattern") and a
// small badge image that stays inline.
type Employee struct {
	Department string           `table:",pk"`
	EmployeeID string           `table:",rk"`
	Name       string           `table:"Name"`
	Photo      largeentity.Blob `table:"Photo,omitempty"`
	Badge      largeentity.Blob `table:"Badge,omitempty"`
	ETag       string           `table:",etag"`
}

// fast is the retry policy of the tests' blob requests.
var fast = testbed.FastRetry()

// bed is one test's table and container, reached directly or through fault proxies.
type bed struct {
	*testbed.Bed
	t       *testing.T
	ctx     context.Context
	store   *largeentity.Store[Employee]
	raw     *container.Client // direct, bypassing proxies
	tproxy  *faultproxy.Proxy // nil unless proxied
	bproxy  *faultproxy.Proxy
	tableNm string
	cname   string
}

func setup(t *testing.T, proxied bool, opts *largeentity.Options) *bed {
	t.Helper()
	tb := testbed.New(t, &testbed.Options{Proxied: proxied})
	b := &bed{Bed: tb, t: t, ctx: tb.Ctx, tableNm: tb.Table}
	if proxied {
		b.tproxy, b.bproxy = tb.Proxies.Table, tb.Proxies.Blob
	}
	if opts == nil {
		opts = &largeentity.Options{}
	}
	if opts.Retry.Delay == 0 {
		opts.Retry = fast
	}
	b.cname = tb.Container(true)
	b.raw = tb.Direct.Blobs.ServiceClient().NewContainerClient(b.cname)
	var err error
	if b.store, err = largeentity.New(testbed.NewTable[Employee](tb, nil), tb.Clients.Blobs, b.cname, opts); err != nil {
		t.Fatal(err)
	}
	return b
}

// blobs lists the names of every blob in the container, sorted.
func (b *bed) blobs() []string {
	out := b.BlobNames(b.cname)
	slices.Sort(out)
	return out
}

// referenced returns the blob names the stored entity references (nil if it does not exist).
func (b *bed) referenced(pk, rk string) []string {
	b.t.Helper()
	e, err := b.store.Table().Get(b.ctx, pk, rk)
	if errors.Is(err, repo.ErrNotFound) {
		return nil
	}
	if err != nil {
		b.t.Fatal(err)
	}
	var out []string
	for _, p := range []largeentity.Blob{e.Photo, e.Badge} {
		if p.Name() != "" {
			out = append(out, p.Name())
		}
	}
	slices.Sort(out)
	return out
}

// consistent checks the invariant: the entity, if any, references only blobs that exist and
// whose content matches; it returns the entity's photo content (nil if none).
func (b *bed) consistent(pk, rk string) []byte {
	b.t.Helper()
	e, err := b.store.Get(b.ctx, pk, rk, &largeentity.GetOptions{Eager: true})
	if errors.Is(err, repo.ErrNotFound) {
		return nil
	}
	if err != nil {
		b.t.Fatalf("the entity is not readable with its blobs: %v", err)
	}
	have := b.blobs()
	for _, n := range b.referenced(pk, rk) {
		if _, ok := slices.BinarySearch(have, n); !ok {
			b.t.Fatalf("the entity points to a missing blob %s", n)
		}
	}
	return e.Photo.Bytes()
}

// sweepAll runs a sweep that sees every blob as old enough.
func (b *bed) sweepAll() largeentity.SweepReport {
	b.t.Helper()
	largeentity.ShiftClock(b.store, 2*largeentity.DefaultSweepGrace)
	defer largeentity.ShiftClock(b.store, 0)
	rep, err := b.store.Sweep(b.ctx)
	if err != nil {
		b.t.Fatal(err)
	}
	return rep
}

func photo(seed uint64, n int) []byte {
	r := rand.New(rand.NewPCG(seed, seed))
	out := make([]byte, n)
	for i := range out {
		out[i] = byte(r.Uint32())
	}
	return out
}

func employee(id string, photoBytes []byte) *Employee {
	return &Employee{
		Department: "Sales", EmployeeID: id, Name: "Don Hall",
		Photo: largeentity.NewBlob(photoBytes, "image/jpeg"),
		Badge: largeentity.NewBlob([]byte("badge "+id), "text/plain"),
	}
}

func mustEqual(t *testing.T, what string, got, want []byte) {
	t.Helper()
	if !bytes.Equal(got, want) {
		t.Fatalf("%s: got %d bytes, want %d (contents differ)", what, len(got), len(want))
	}
}
