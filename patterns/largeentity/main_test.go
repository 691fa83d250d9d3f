package largeentity_test

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
	"github.com/tablepatterns/tablepatterns/internal/testenv"
	"github.com/tablepatterns/tablepatterns/patterns/largeentity"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/repo/account"
	"github.com/tablepatterns/tablepatterns/retry"
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

var fast = retry.Policy{Delay: 5 * time.Millisecond, MinDelay: time.Millisecond, MaxDelay: 20 * time.Millisecond}

// bed is one test's table and container, reached directly or through fault proxies.
type bed struct {
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
	b := &bed{t: t, ctx: t.Context(), tableNm: testenv.TableName(t)}
	cs := testenv.ConnectionString(t)
	if proxied {
		ps := testenv.Proxies(t)
		cs, b.tproxy, b.bproxy = ps.ConnectionString, ps.Table, ps.Blob
	}
	clients, err := account.NewClients(cs, nil)
	if err != nil {
		t.Fatal(err)
	}
	table, err := repo.New[Employee](clients.Tables, b.tableNm, &repo.Options{Retry: fast})
	if err != nil {
		t.Fatal(err)
	}
	if opts == nil {
		opts = &largeentity.Options{}
	}
	if opts.Retry.Delay == 0 {
		opts.Retry = fast
	}
	cname := testenv.ContainerName(t)
	b.cname = cname
	b.store, err = largeentity.New(table, clients.Blobs, cname, opts)
	if err != nil {
		t.Fatal(err)
	}
	raw := testenv.BlobService(t)
	b.raw = raw.ServiceClient().NewContainerClient(cname)
	if _, err := testenv.TableService(t).CreateTable(b.ctx, b.tableNm, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := b.raw.Create(b.ctx, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_, _ = testenv.TableService(t).DeleteTable(ctx, b.tableNm, nil)
		_, _ = b.raw.Delete(ctx, nil)
	})
	return b
}

// blobs lists the names of every blob in the container.
func (b *bed) blobs() []string {
	b.t.Helper()
	var out []string
	p := b.raw.NewListBlobsFlatPager(nil)
	for p.More() {
		page, err := p.NextPage(b.ctx)
		if err != nil {
			b.t.Fatal(err)
		}
		for _, it := range page.Segment.BlobItems {
			out = append(out, *it.Name)
		}
	}
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
