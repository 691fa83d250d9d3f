package keyspread_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/tablepatterns/tablepatterns/codec/keys"
	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
	"github.com/tablepatterns/tablepatterns/internal/testenv"
	"github.com/tablepatterns/tablepatterns/patterns/internal/testbed"
	"github.com/tablepatterns/tablepatterns/patterns/keyspread"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/repo/account"
	"github.com/tablepatterns/tablepatterns/repo/filter"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// Access is the guide's employee access log entry (the Azure Table storage design guide, prepend/append
// anti-pattern): one partition per hour would take every write of the hour.
type Access struct {
	Partition string `table:",pk"`
	RowKey    string `table:",rk"`
	Employee  string `table:"Employee"`
	Resource  string `table:"Resource"`
	Granted   bool   `table:"Granted"`
}

func table[T any](t *testing.T, proxied bool) (*repo.Table[T], *faultproxy.Proxy) {
	t.Helper()
	tb, proxy, _ := tableWithClients[T](t, proxied)
	return tb, proxy
}

func benchTable(b *testing.B) (*repo.Table[Access], *faultproxy.Proxy) {
	b.Helper()
	tb, proxy, _ := tableWithClients[Access](b, false)
	return tb, proxy
}

func tableWithClients[T any](t testing.TB, proxied bool) (*repo.Table[T], *faultproxy.Proxy, *account.Clients) {
	t.Helper()
	b := testbed.New(t, &testbed.Options{Proxied: proxied})
	return testbed.NewTable[T](b, nil), b.Proxy(), b.Clients
}

// accessLog writes n access entries of one hour spread over b by their RowKey, and
// returns their RowKeys in order.
func accessLog(t *testing.T, tb *repo.Table[Access], b keyspread.Buckets, hour string, n int) []string {
	t.Helper()
	return accessLogTB(t, tb, b, hour, n)
}

func accessLogTB(t testing.TB, tb *repo.Table[Access], b keyspread.Buckets, hour string, n int) []string {
	t.Helper()
	items := make([]*Access, n)
	rks := make([]string, n)
	for i := range items {
		rk := keys.InvertedTicksUnique(time.Date(2014, 7, 31, 18, 0, 0, 0, time.UTC).Add(time.Duration(i)*time.Second), fmt.Sprintf("%06d", i))
		rks[i] = rk
		items[i] = &Access{Partition: b.KeyBy(hour, rk), RowKey: rk, Employee: fmt.Sprintf("%06d", i%37), Resource: "vpn", Granted: i%5 != 0}
	}
	if err := tb.BulkWrite(t.Context(), items, nil); err != nil {
		t.Fatal(err)
	}
	slices.Sort(rks)
	return rks
}

func rowKeys(t *testing.T, seq func(func(Access, error) bool)) []string {
	t.Helper()
	var out []string
	for a, err := range seq {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, a.RowKey)
	}
	return out
}

func TestReadPartitionMergesBuckets(t *testing.T) {
	t.Parallel()
	tb, proxy := table[Access](t, true)
	b, _ := keyspread.NewBuckets(8)
	want := accessLog(t, tb, b, "2014-07-31T18", 400)
	ctx := t.Context()

	// Short pages, and an empty first page with a continuation, as real Azure may send.
	proxy.EmulatePaging(37, true)
	mark := proxy.Count()
	got := rowKeys(t, keyspread.ReadPartition(ctx, tb, b, "2014-07-31T18", nil))
	if !slices.Equal(got, want) {
		t.Fatalf("merged %d entities, want %d in RowKey order", len(got), len(want))
	}
	if n := proxy.Count() - mark; n < 8 {
		t.Fatalf("%d requests for 8 buckets", n)
	}
	proxy.EmulatePaging(0, false)

	// The newest 10 (inverted ticks: smallest RowKeys first) over all buckets.
	top := rowKeys(t, keyspread.ReadPartition(ctx, tb, b, "2014-07-31T18", &keyspread.ReadOptions{Top: 10}))
	if !slices.Equal(top, want[:10]) {
		t.Fatalf("top 10: %q", top)
	}
	// A RowKey range and a property condition.
	lo, hi := want[100], want[200]
	ranged := rowKeys(t, keyspread.ReadPartition(ctx, tb, b, "2014-07-31T18", &keyspread.ReadOptions{RowFrom: lo, RowTo: hi, Concurrency: 2}))
	if !slices.Equal(ranged, want[100:200]) {
		t.Fatalf("range: %d entities", len(ranged))
	}
	var denied int
	for a, err := range keyspread.ReadPartition(ctx, tb, b, "2014-07-31T18", &keyspread.ReadOptions{Where: filter.Eq("Granted", false)}) {
		if err != nil || a.Granted {
			t.Fatalf("%+v, %v", a, err)
		}
		denied++
	}
	if denied != 80 {
		t.Fatalf("%d denied accesses, want 80", denied)
	}
	// Breaking out early stops the reads.
	n := 0
	for range keyspread.ReadPartition(ctx, tb, b, "2014-07-31T18", nil) {
		if n++; n == 3 {
			break
		}
	}
	if got := rowKeys(t, keyspread.ReadPartition(ctx, tb, b, "2014-07-31T19", nil)); len(got) != 0 {
		t.Fatalf("an empty hour returned %d", len(got))
	}

	// Invalid options are refused before any request.
	mark = proxy.Count()
	for _, o := range []*keyspread.ReadOptions{{Top: -1}, {Concurrency: -2}, {Where: filter.Eq("bad name", 1)}} {
		for _, err := range keyspread.ReadPartition(ctx, tb, b, "2014-07-31T18", o) {
			if !errors.Is(err, repo.ErrInvalidInput) {
				t.Errorf("options %+v: %v", o, err)
			}
		}
	}
	if n := proxy.Count() - mark; n != 0 {
		t.Fatalf("%d requests sent for invalid options", n)
	}
}

type Order struct {
	Key    string `table:",pk"`
	Line   string `table:",rk"`
	Amount int64  `table:"Amount"`
}

// Sequential order numbers spread with Key: a range of them is one query per bucket.
func TestReadRangeOfSequentialKeys(t *testing.T) {
	t.Parallel()
	tb, _ := table[Order](t, false)
	b, _ := keyspread.NewBuckets(4)
	var items []*Order
	for i := 200001; i <= 200120; i++ {
		for line := 1; line <= 2; line++ {
			items = append(items, &Order{Key: b.Key(fmt.Sprint(i)), Line: fmt.Sprint(line), Amount: int64(i)})
		}
	}
	if err := tb.BulkWrite(t.Context(), items, nil); err != nil {
		t.Fatal(err)
	}
	var got []string
	for o, err := range keyspread.ReadRange(t.Context(), tb, b, "200050", "200060", nil) {
		if err != nil {
			t.Fatal(err)
		}
		_, natural, _ := b.Split(o.Key)
		got = append(got, natural+"/"+o.Line)
	}
	var want []string
	for i := 200050; i < 200060; i++ {
		want = append(want, fmt.Sprintf("%d/1", i), fmt.Sprintf("%d/2", i))
	}
	if !slices.Equal(got, want) {
		t.Fatalf("range 200050-200060: %q", got)
	}
	all := 0
	for _, err := range keyspread.ReadRange(t.Context(), tb, b, "", "", nil) {
		if err != nil {
			t.Fatal(err)
		}
		all++
	}
	if all != len(items) {
		t.Fatalf("open range: %d of %d", all, len(items))
	}
	for _, err := range keyspread.ReadRange(t.Context(), tb, b, "a", "b", &keyspread.ReadOptions{RowFrom: "1"}) {
		if !errors.Is(err, repo.ErrInvalidInput) {
			t.Fatalf("RowFrom on a range: %v", err)
		}
	}
}

// A failing bucket query ends the merge with its error.
func TestReadPartitionError(t *testing.T) {
	t.Parallel()
	tb, proxy := table[Access](t, true)
	b, _ := keyspread.NewBuckets(4)
	accessLog(t, tb, b, "h", 20)
	proxy.AddRule(faultproxy.Rule{Match: faultproxy.All(faultproxy.IsListEntities, faultproxy.QueryContains("%272_h%27")), Action: faultproxy.Respond(403, "AuthorizationFailure")})
	var err error
	for _, e := range keyspread.ReadPartition(context.Background(), tb, b, "h", nil) {
		if e != nil {
			err = e
		}
	}
	var se *repo.Error
	if !errors.As(err, &se) || se.StatusCode != 403 {
		t.Fatalf("merge of a failing bucket: %v", err)
	}
}
