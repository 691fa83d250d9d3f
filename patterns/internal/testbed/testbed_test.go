package testbed_test

import (
	"errors"
	"testing"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/internal/testenv"
	"github.com/tablepatterns/tablepatterns/patterns/internal/testbed"
	"github.com/tablepatterns/tablepatterns/repo"
)

func TestMain(m *testing.M) { testenv.Main(m) }

func TestBedTableThroughProxy(t *testing.T) {
	b := testbed.New(t, &testbed.Options{Proxied: true})
	tb := testbed.NewTable[codec.Entity](b, nil)
	mark := b.Proxy().Count()
	if err := tb.Insert(b.Ctx, &codec.Entity{PartitionKey: "p", RowKey: "r"}); err != nil {
		t.Fatal(err)
	}
	if b.Proxy().Count() == mark {
		t.Fatal("the proxied table's insert did not go through the proxy")
	}
	mark = b.Proxy().Count()
	if _, err := b.Raw.Get(b.Ctx, "p", "r"); err != nil {
		t.Fatalf("Raw does not see the row: %v", err)
	}
	if b.Proxy().Count() != mark {
		t.Fatal("Raw went through the proxy")
	}
}

func TestBedNoTable(t *testing.T) {
	b := testbed.New(t, &testbed.Options{NoTable: true})
	if b.Proxy() != nil {
		t.Fatal("a direct bed has a proxy")
	}
	if _, err := b.Raw.Get(b.Ctx, "p", "r"); !errors.Is(err, repo.ErrNotFound) {
		t.Fatalf("Get on the uncreated table: %v, want ErrNotFound", err)
	}
	if p := testbed.FastRetry(); p.MaxRetries <= 0 || p.MaxDelay <= 0 || p.Validate() != nil {
		t.Fatalf("FastRetry = %+v", p)
	}
}

func TestBedQueueAndContainer(t *testing.T) {
	b := testbed.New(t, &testbed.Options{Proxied: true, NoTable: true})
	q, name := b.Queue()
	if name == "" || q.Queue() == nil {
		t.Fatal("no queue")
	}
	if _, err := b.Direct.Queues.NewQueueClient(name).GetProperties(b.Ctx, nil); err != nil {
		t.Fatalf("the queue was not created: %v", err)
	}
	c := b.Container(true)
	if _, err := b.Direct.Blobs.ServiceClient().NewContainerClient(c).GetProperties(b.Ctx, nil); err != nil {
		t.Fatalf("the container was not created: %v", err)
	}
	for _, name := range []string{"b/2", "a/1"} {
		if _, err := b.Direct.Blobs.UploadBuffer(b.Ctx, c, name, []byte("x"), nil); err != nil {
			t.Fatal(err)
		}
	}
	if got := b.BlobNames(c); len(got) != 2 || got[0] != "a/1" || got[1] != "b/2" {
		t.Fatalf("BlobNames = %q", got)
	}
}
