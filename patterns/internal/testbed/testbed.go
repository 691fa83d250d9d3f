// Package testbed is the one test harness of the pattern packages: a Bed holds what a
// pattern test works with (its context, the account's clients reached directly and through
// fault proxies, a fresh table, and a raw view of that table that bypasses the pattern),
// and FastRetry is the retry policy that keeps fault tests short.
//
// It stands on internal/testenv, so the package's TestMain must call testenv.Main; Azurite
// starts on the first test that asks for storage, and tests that do not ask run without it.
// Everything a Bed creates is deleted by t.Cleanup.
//
// Use it as
//
//	b := testbed.New(t, &testbed.Options{Proxied: true})
//	tb, err := repo.New[Employee](b.Clients.Tables, b.Table, b.RepoOptions())
package testbed

import (
	"context"
	"testing"
	"time"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/internal/benchcmp"
	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
	"github.com/tablepatterns/tablepatterns/internal/testenv"
	"github.com/tablepatterns/tablepatterns/patterns/internal/archivetest"
	"github.com/tablepatterns/tablepatterns/queueworker"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/repo/account"
	"github.com/tablepatterns/tablepatterns/retry"
)

// FastRetry returns the retry policy of pattern tests: waits of a few milliseconds and
// enough retries to ride out injected transient faults, so that a fault test finishes in
// well under a second yet cannot fail for want of a retry. Each call returns a fresh copy.
func FastRetry() retry.Policy {
	return retry.Policy{Delay: 5 * time.Millisecond, MinDelay: time.Millisecond, MaxDelay: 50 * time.Millisecond, MaxRetries: 30, MaxElapsed: time.Minute}
}

// Options configures New. The zero value (and nil) gives a direct bed with a fresh table.
type Options struct {
	// Proxied routes Clients through a fault proxy per service (Proxies); Direct always
	// bypasses them. Defaults to false: Clients is Direct.
	Proxied bool
	// NoTable leaves the table uncreated (Table still holds a fresh unique name, and Raw is
	// built on it): for tests of code that creates its table, or owns several. Defaults to
	// false: the table is created, and deleted by t.Cleanup.
	NoTable bool
}

// Bed is one test's account access and table.
type Bed struct {
	// T is the test the bed belongs to.
	T testing.TB
	// Ctx is the test's context (t.Context()).
	Ctx context.Context
	// Direct are the account's clients, straight to the server: for setup and assertions.
	Direct *account.Clients
	// Clients are the clients for the code under test: through the proxies when the bed is
	// proxied, else Direct.
	Clients *account.Clients
	// Proxies are the fault proxies in front of the table, queue and blob services; nil
	// unless the bed is proxied.
	Proxies *testenv.ProxySet
	// Table is the name of the test's table, unique to this bed.
	Table string
	// Raw reads and writes every row of Table directly, bypassing the pattern and the
	// proxies.
	Raw *repo.Table[codec.Entity]
}

// New returns a fresh bed for t. It fails the test if the storage account cannot be
// reached or the table cannot be created.
func New(t testing.TB, opts *Options) *Bed {
	t.Helper()
	if opts == nil {
		opts = &Options{}
	}
	b := &Bed{T: t, Ctx: t.Context(), Table: testenv.TableName(t)}
	var err error
	if b.Direct, err = account.NewClients(testenv.ConnectionString(t), nil); err != nil {
		t.Fatal(err)
	}
	b.Clients = b.Direct
	if opts.Proxied {
		b.Proxies = testenv.Proxies(t)
		if b.Clients, err = account.NewClients(b.Proxies.ConnectionString, nil); err != nil {
			t.Fatal(err)
		}
	}
	if !opts.NoTable {
		testenv.Table(t, b.Table)
	}
	if b.Raw, err = repo.New[codec.Entity](b.Direct.Tables, b.Table, b.RepoOptions()); err != nil {
		t.Fatal(err)
	}
	return b
}

// Proxy returns the table service's fault proxy, or nil when the bed is not proxied.
func (b *Bed) Proxy() *faultproxy.Proxy {
	if b.Proxies == nil {
		return nil
	}
	return b.Proxies.Table
}

// RepoOptions returns fresh repo options with FastRetry, for tables of the code under test.
func (b *Bed) RepoOptions() *repo.Options {
	return &repo.Options{Retry: FastRetry()}
}

// NewTable returns a repo table of T on the bed's Clients (proxied when the bed is) with
// opts, FastRetry filling opts.Retry field by field. It fails the test on an error.
func NewTable[T any](b *Bed, opts *repo.Options) *repo.Table[T] {
	b.T.Helper()
	o := repo.Options{}
	if opts != nil {
		o = *opts
	}
	o.Retry = o.Retry.Or(FastRetry())
	tb, err := repo.New[T](b.Clients.Tables, b.Table, &o)
	if err != nil {
		b.T.Fatal(err)
	}
	return tb
}

// NewTableName creates another fresh table on the account (deleted by t.Cleanup) and
// returns its name.
func (b *Bed) NewTableName() string {
	b.T.Helper()
	name := testenv.TableName(b.T)
	testenv.Table(b.T, name)
	return name
}

// Queue creates a fresh queue (it and its poison queue are deleted by t.Cleanup) and
// returns a queueworker client on it through the bed's Clients, with FastRetry, and the
// queue's name.
func (b *Bed) Queue() (*queueworker.Client, string) {
	b.T.Helper()
	name := testenv.QueueName(b.T)
	direct := b.Direct.Queues.NewQueueClient(name)
	if _, err := direct.Create(b.Ctx, nil); err != nil {
		b.T.Fatal(err)
	}
	b.T.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_, _ = direct.Delete(ctx, nil)
		_, _ = b.Direct.Queues.NewQueueClient(name+queueworker.PoisonSuffix).Delete(ctx, nil)
	})
	c, err := queueworker.NewClient(b.Clients.Queues.NewQueueClient(name), &queueworker.ClientOptions{Retry: FastRetry()})
	if err != nil {
		b.T.Fatal(err)
	}
	return c, name
}

// Container returns a fresh blob container name; when create is true the container is
// created. Either way t.Cleanup deletes it if it exists.
func (b *Bed) Container(create bool) string {
	b.T.Helper()
	name := testenv.ContainerName(b.T)
	c := b.Direct.Blobs.ServiceClient().NewContainerClient(name)
	if create {
		if _, err := c.Create(b.Ctx, nil); err != nil {
			b.T.Fatal(err)
		}
	}
	b.T.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_, _ = c.Delete(ctx, nil)
	})
	return name
}

// BlobNames lists the names of every blob in the container, directly (bypassing the
// proxies), in the service's order (by name). It fails the test on an error.
func (b *Bed) BlobNames(container string) []string {
	b.T.Helper()
	var out []string
	p := b.Direct.Blobs.ServiceClient().NewContainerClient(container).NewListBlobsFlatPager(nil)
	for p.More() {
		page, err := p.NextPage(b.Ctx)
		if err != nil {
			b.T.Fatal(err)
		}
		for _, it := range page.Segment.BlobItems {
			out = append(out, *it.Name)
		}
	}
	return out
}

// WaitFor polls cond every few milliseconds until it holds, and fails the test if it does
// not within testenv.DefaultStall, a bound for a hang that a loaded machine does not reach.
// It is how tests wait for state: never a bare sleep.
func WaitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(testenv.DefaultStall)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Drain runs w until its queue is empty and fails the test on an error, as long as the
// worker makes progress (archivetest.Drain).
func Drain(t testing.TB, w *queueworker.Worker) {
	t.Helper()
	archivetest.Drain(t, w)
}

// Progress sums the counters of w that move while it works (archivetest.Progress).
func Progress(w *queueworker.Worker) int64 { return archivetest.Progress(w) }

// CountRequests points the bed's Clients at the server directly through a transport that
// counts their requests, and returns the counter: for benchmarks that report requests per
// operation (internal/benchcmp). The bed must not be proxied.
func (b *Bed) CountRequests() *benchcmp.Counter {
	b.T.Helper()
	if b.Proxies != nil {
		b.T.Fatal("testbed: CountRequests on a proxied bed")
	}
	ctr := benchcmp.NewCounter()
	clients, err := account.NewClients(testenv.ConnectionString(b.T), &account.ClientOptions{Transport: ctr})
	if err != nil {
		b.T.Fatal(err)
	}
	b.Clients = clients
	return ctr
}
