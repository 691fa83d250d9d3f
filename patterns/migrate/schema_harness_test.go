package migrate

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/patterns/internal/testbed"
	"github.com/tablepatterns/tablepatterns/patterns/migrate/internal/employees"
	"github.com/tablepatterns/tablepatterns/repo"
)

type EmployeeSplit = employees.EmployeeSplit

// stagedFix is one test's staged schema migration: version 1 holds Name, version 2
// FirstName and LastName (employees.SplitName, employees.JoinName).
type stagedFix struct {
	b       *testbed.Bed
	s       *Schema[EmployeeSplit]
	control string
}

const stagedName = "split-names"

func setupStaged(t testing.TB, proxied bool, pageSize int) *stagedFix {
	t.Helper()
	b := testbed.New(t, &testbed.Options{Proxied: proxied})
	f := &stagedFix{b: b, control: b.NewTableName()}
	f.s = f.newSchema(t, stagedName, true, pageSize)
	return f
}

func (f *stagedFix) newSchema(t testing.TB, name string, downgrades bool, pageSize int) *Schema[EmployeeSplit] {
	t.Helper()
	spec := SchemaSpec[EmployeeSplit]{Service: f.b.Clients.Tables, Table: testbed.NewTable[EmployeeSplit](f.b, nil),
		Upgrades: []func(*codec.Entity) error{employees.SplitName}, Name: name, Control: f.control}
	if downgrades {
		spec.Downgrades = []func(*codec.Entity) error{employees.JoinName}
	}
	o := testOptions()
	s, err := NewSchema(spec, &SchemaOptions{Refresh: o.Refresh, WriteTimeout: o.WriteTimeout, ClockSkew: o.ClockSkew,
		Retry: o.Retry, PageSize: pageSize})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// planned seeds n entities at version 1 over parts partitions (the version property
// absent, as data written before any schema version was), plans, and returns the keys
// and the model.
func (f *stagedFix) planned(t testing.TB, n, parts int) ([][2]string, *model) {
	t.Helper()
	items := make([]*codec.Entity, n)
	md := newModel()
	keys := make([][2]string, n)
	for i := range items {
		pk, rk := key(i%parts, i)
		items[i] = &codec.Entity{PartitionKey: pk, RowKey: rk, Properties: map[string]any{"Name": "F" + rk + " L", "Seq": int64(1)}}
		keys[i] = [2]string{pk, rk}
		md.set(pk, rk, 1)
	}
	if err := f.b.Raw.BulkWrite(f.b.Ctx, items, nil); err != nil {
		t.Fatal(err)
	}
	if err := f.s.Plan(f.b.Ctx); err != nil {
		t.Fatal(err)
	}
	return keys, md
}

func (f *stagedFix) advanceTo(t testing.TB, stage Stage) {
	t.Helper()
	for {
		st, err := f.s.Status(f.b.Ctx)
		if err != nil {
			t.Fatal(err)
		}
		if st.Stage == stage {
			return
		}
		if _, err := f.s.Advance(f.b.Ctx); err != nil {
			t.Fatalf("advance from %s: %v", st.Stage, err)
		}
	}
}

// stagedWriter keeps writing through the schema migration until stop, as writer does
// through a re-keying one: each key has one goroutine, a write is retried until it is
// acknowledged and recorded in the model then; with deletes, a quarter of the writes
// delete (and a later write re-inserts).
type stagedWriter struct {
	s       *Schema[EmployeeSplit]
	md      *model
	keys    [][2]string
	deletes bool
	writes  atomic.Int64
}

func (w *stagedWriter) run(ctx context.Context, t testing.TB, goroutines int, stop <-chan struct{}) *sync.WaitGroup {
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(g), 11))
			seqs := map[[2]string]int64{}
			for {
				select {
				case <-stop:
					return
				default:
				}
				var k [2]string
				for {
					k = w.keys[r.IntN(len(w.keys))]
					if int(fnv32(k[1]))%goroutines == g {
						break
					}
				}
				seqs[k] = max(seqs[k], 1) + 1
				if w.deletes && r.IntN(4) == 0 {
					w.retry(ctx, t, func() error {
						err := w.s.Delete(ctx, k[0], k[1], nil)
						if errors.Is(err, repo.ErrNotFound) {
							return nil
						}
						return err
					})
					w.md.del(k[0], k[1])
					continue
				}
				v := &EmployeeSplit{Department: k[0], EmployeeID: k[1], FirstName: "F" + k[1], LastName: "L", Seq: seqs[k]}
				w.retry(ctx, t, func() error { return w.s.Upsert(ctx, v) })
				w.md.set(k[0], k[1], seqs[k])
				w.writes.Add(1)
			}
		})
	}
	return &wg
}

func (w *stagedWriter) retry(ctx context.Context, t testing.TB, do func() error) {
	for {
		err := do()
		if err == nil || ctx.Err() != nil {
			return
		}
		if errors.Is(err, repo.ErrInvalidInput) {
			t.Errorf("writer: %v", err)
			return
		}
	}
}

// stagedReader reads keys that are never deleted through the schema migration until
// stop: a gap (not found, or a shape it cannot read) or a step back (a lower Seq after
// a higher one, or a value not in the latest shape) is an error.
type stagedReader struct {
	s     *Schema[EmployeeSplit]
	keys  [][2]string
	reads atomic.Int64
	mu    sync.Mutex
	errs  []string
}

func (rd *stagedReader) run(ctx context.Context, stop <-chan struct{}) *sync.WaitGroup {
	var wg sync.WaitGroup
	wg.Go(func() {
		seen := map[[2]string]int64{}
		for {
			for _, k := range rd.keys {
				select {
				case <-stop:
					return
				default:
				}
				v, err := rd.s.Get(ctx, k[0], k[1])
				rd.reads.Add(1)
				rd.mu.Lock()
				switch {
				case errors.Is(err, repo.ErrNotFound), errors.Is(err, repo.ErrInvalidInput):
					rd.errs = append(rd.errs, fmt.Sprintf("%v: %v", k, err))
				case err != nil: // no answer (a deadline, retries spent): no gap
				case v.FirstName != "F"+k[1] || v.LastName != "L":
					rd.errs = append(rd.errs, fmt.Sprintf("%v: read %q %q, not the latest shape", k, v.FirstName, v.LastName))
				case v.Seq < seen[k]:
					rd.errs = append(rd.errs, fmt.Sprintf("%v: Seq %d after %d", k, v.Seq, seen[k]))
				default:
					seen[k] = v.Seq
				}
				rd.mu.Unlock()
			}
		}
	})
	return &wg
}

func (rd *stagedReader) check(t testing.TB) {
	t.Helper()
	rd.mu.Lock()
	defer rd.mu.Unlock()
	if len(rd.errs) > 0 {
		t.Errorf("reader: %d gaps or steps back, first: %v", len(rd.errs), rd.errs[:min(5, len(rd.errs))])
	}
}

// mustHoldAt checks every stored entity against the model: exactly the live entities,
// each at its last Seq, stored at version (2: FirstName and LastName; 1: Name) in that
// version's shape, none that was deleted.
func (f *stagedFix) mustHoldAt(t testing.TB, md *model, version int) {
	t.Helper()
	all, err := f.b.Raw.Collect(f.b.Ctx, repo.Query{})
	if err != nil {
		t.Fatal(err)
	}
	md.mu.Lock()
	defer md.mu.Unlock()
	bad := 0
	fail := func(format string, args ...any) {
		if bad++; bad <= 5 {
			t.Errorf(format, args...)
		}
	}
	for _, e := range all {
		k := [2]string{e.PartitionKey, e.RowKey}
		v, err := f.s.version(&e)
		switch {
		case err != nil:
			fail("%v: %v", k, err)
		case v != version:
			fail("%v: stored at version %d, want %d", k, v, version)
		case version == 2 && (e.Properties["FirstName"] != "F"+k[1] || e.Properties["LastName"] != "L" || e.Properties["Name"] != nil):
			fail("%v: not in version 2's shape: %v", k, e.Properties)
		case version == 1 && (e.Properties["Name"] != "F"+k[1]+" L" || e.Properties["FirstName"] != nil):
			fail("%v: not in version 1's shape: %v", k, e.Properties)
		}
		if md.dead[k] {
			fail("%v: deleted, yet stored", k)
		} else if seqOf(e) != md.seq[k] {
			fail("%v: Seq %d, want %d", k, seqOf(e), md.seq[k])
		}
	}
	if len(all) != len(md.seq) {
		t.Errorf("the table holds %d entities, want %d", len(all), len(md.seq))
	}
}

// schemaKillLoop runs worker processes (killworker in schema mode) on queue as runKillLoop
// does, until stop.
func (f *stagedFix) schemaKillLoop(t *testing.T, bin, queue string, pageSize int, stop <-chan struct{}) (*sync.WaitGroup, *killCount) {
	env := workerEnv(t, "MIGRATE_MODE=schema", "MIGRATE_SOURCE="+f.b.Table, "MIGRATE_CONTROL="+f.control,
		"MIGRATE_QUEUE="+queue, "MIGRATE_NAME="+stagedName, "MIGRATE_PAGE_SIZE="+strconv.Itoa(pageSize))
	return runKillLoop(t, bin, env, stop, func() Stage { return f.s.m.cached().Stage })
}
