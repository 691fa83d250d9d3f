package wideentity_test

import (
	"errors"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
	"github.com/tablepatterns/tablepatterns/patterns/wideentity"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/retry"
)

// tornRead reads P/E with a Store built with o while a writer commits version 2 between
// the read's pages: the reader meets chunks of two revisions. It returns what the reader
// got and the torn-read retries it logged.
func tornRead(t *testing.T, o *wideentity.Options) (*wideentity.Entity, []observer.LoggedEntry) {
	t.Helper()
	b := setup(t, true)
	core, logs := observer.New(zap.WarnLevel)
	reader := storeWith(t, b, &repo.Options{Logger: zap.New(core)}, o)
	writer := storeDirect(t, b, nil)
	if err := writer.Insert(b.Ctx, &wideentity.Entity{PartitionKey: "P", RowKey: "E", Properties: year(1)}); err != nil {
		t.Fatal(err)
	}
	// One chunk per page, as Azure may answer; before the second page, a writer commits.
	b.Proxy().EmulatePaging(1, false)
	var once sync.Once
	var werr error
	b.Proxy().AddRule(faultproxy.Rule{Name: "interleave", Match: func(r *http.Request) bool {
		if faultproxy.IsListEntities(r) && strings.Contains(r.URL.RawQuery, "NextRowKey") {
			once.Do(func() {
				werr = writer.Put(r.Context(), &wideentity.Entity{PartitionKey: "P", RowKey: "E", Properties: year(2)})
			})
		}
		return false
	}})
	got, err := reader.Get(b.Ctx, "P", "E")
	if werr != nil {
		t.Fatal(werr)
	}
	if err != nil {
		t.Fatal(err)
	}
	return got, logs.FilterField(zap.String("op", "wide get")).All()
}

// A write that commits between the pages of a read gives the reader chunks of two
// revisions; the reader detects it and reads again.
func TestTornReadIsDetectedAndRetried(t *testing.T) {
	t.Parallel()
	got, torn := tornRead(t, nil)
	if !reflect.DeepEqual(got.Properties, year(2)) {
		t.Fatalf("read %q, want version 2", got.Properties["Name"])
	}
	if len(torn) != 1 {
		t.Fatalf("%d torn reads retried, want 1", len(torn))
	}
}

// A partly filled TornRetry is completed field by field: TornRetry{MaxRetries: 8} keeps the
// quick torn-read delays instead of the 100 ms minimum of transient retries.
func TestPartialTornRetryKeepsQuickDelays(t *testing.T) {
	t.Parallel()
	_, torn := tornRead(t, &wideentity.Options{TornRetry: retry.Policy{MaxRetries: 8}})
	if len(torn) != 1 {
		t.Fatalf("%d torn reads retried, want 1", len(torn))
	}
	if d, _ := torn[0].ContextMap()["delay"].(time.Duration); d <= 0 || d >= 100*time.Millisecond {
		t.Fatalf("the torn-read retry waited %v: the transient defaults replaced the torn-read delays", d)
	}
}

// Chunks damaged outside this package (another revision, a missing chunk, a property in
// two chunks) are reported as torn once the retries are spent, never returned as an entity.
func TestDamagedChunksAreReportedTorn(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	s := store(t, b, nil)
	raw := b.Raw
	damage := map[string]func(rk string, chunks []codec.Entity) error{
		"other revision": func(rk string, chunks []codec.Entity) error {
			c := chunks[1]
			c.Properties[wideentity.RevProperty] = "someone-else"
			return raw.Upsert(b.Ctx, &c, nil)
		},
		"missing chunk": func(rk string, chunks []codec.Entity) error {
			return raw.Delete(b.Ctx, "P", chunks[0].RowKey, nil)
		},
		"property twice": func(rk string, chunks []codec.Entity) error {
			c := chunks[0]
			for k, v := range chunks[1].Properties {
				if strings.HasPrefix(k, "D") {
					c.Properties[k] = v
					break
				}
			}
			return raw.Upsert(b.Ctx, &c, nil)
		},
	}
	for name, f := range damage {
		rk := strings.ReplaceAll(name, " ", "")
		if err := s.Insert(b.Ctx, &wideentity.Entity{PartitionKey: "P", RowKey: rk, Properties: year(4)}); err != nil {
			t.Fatal(err)
		}
		if err := f(rk, chunksOf(t, b, "P", rk)); err != nil {
			t.Fatal(err)
		}
		_, err := s.Get(b.Ctx, "P", rk)
		if !errors.Is(err, wideentity.ErrTorn) || !errors.Is(err, retry.ErrTransient) {
			t.Errorf("%s: %v, want ErrTorn after retries", name, err)
		}
		// Put overwrites the damage (it replaces and deletes what it reads).
		if name != "other revision" { // a damaged read cannot be the base of a write...
			continue
		}
		if err := s.Delete(b.Ctx, "P", rk, nil); err != nil { // ...but Delete clears any chunks
			t.Fatal(err)
		}
		if got := chunksOf(t, b, "P", rk); len(got) != 0 {
			t.Fatalf("Delete left %d chunks", len(got))
		}
	}
}
