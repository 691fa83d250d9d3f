package migrate

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/internal/testenv"
	"github.com/tablepatterns/tablepatterns/patterns/internal/testbed"
	"github.com/tablepatterns/tablepatterns/patterns/migrate/internal/employees"
	"github.com/tablepatterns/tablepatterns/repo"
)

func TestMain(m *testing.M) { testenv.Main(m) }

type (
	Employee   = employees.Employee
	EmployeeV2 = employees.EmployeeV2
)

var (
	hashKeys = employees.HashKeys
	upgrade  = employees.Upgrade
)

// fix is one test's migration: old table, new table (or the same), control table.
type fix struct {
	b   *testbed.Bed
	m   *Migration[Employee, EmployeeV2]
	src *repo.Table[Employee]
	tgt *repo.Table[EmployeeV2]
}

// testOptions keep transitions short: every process of a test shares one clock.
func testOptions() *Options {
	return &Options{Refresh: 50 * time.Millisecond, WriteTimeout: 2 * time.Second, ClockSkew: 20 * time.Millisecond, Retry: testbed.FastRetry()}
}

func setup(t testing.TB, sameTable bool, proxied bool) *fix {
	t.Helper()
	b := testbed.New(t, &testbed.Options{Proxied: proxied})
	f := &fix{b: b}
	f.src = testbed.NewTable[Employee](b, nil)
	tgtName := b.Table
	if !sameTable {
		tgtName = b.NewTableName()
	}
	var err error
	if f.tgt, err = repo.New[EmployeeV2](b.Clients.Tables, tgtName, b.RepoOptions()); err != nil {
		t.Fatal(err)
	}
	f.m = f.newMigration(t, "hash-departments", b.NewTableName())
	return f
}

// patient gives f's migration a WriteTimeout a loaded machine meets, for a test whose
// writes or chunks run many requests in a row under one deadline (each transition's
// settle grows with it). A test of the chunk's path also calls chunksStayChunks: a
// chunk can still outlast it.
func (f *fix) patient(t testing.TB) {
	t.Helper()
	m, err := New(Spec[Employee, EmployeeV2]{Name: f.m.spec.Name, Service: f.b.Clients.Tables, Source: f.src, Target: f.tgt,
		Keys: hashKeys, Transform: upgrade, Control: f.m.control.Name()}, patientOptions())
	if err != nil {
		t.Fatal(err)
	}
	f.m = m
}

// chunksStayChunks fails t, at its end, if a chunk of m outlasted its deadline: its
// entities then went through the per-entity rule, so a test of the chunk's path (its
// transactions, its cost) did not test it, and passing would prove nothing about it.
func chunksStayChunks(t testing.TB, m *Migration[Employee, EmployeeV2]) {
	var late atomic.Int64
	m.seams.chunkLate = func() { late.Add(1) }
	t.Cleanup(func() {
		if n := late.Load(); n > 0 {
			t.Errorf("%d chunks outlasted their WriteTimeout (%s) and went entity by entity: the chunk's path was not tested", n, m.opts.WriteTimeout)
		}
	})
}

// patientOptions are testOptions with a WriteTimeout a loaded machine meets: a chunk
// of 100 entities, or a write of many requests, past its deadline takes another path
// (the per-entity rule), which a test of the chunk's path or cost must not see.
func patientOptions() *Options {
	o := testOptions()
	o.WriteTimeout = 6 * time.Second
	return o
}

func (f *fix) newMigration(t testing.TB, name, control string) *Migration[Employee, EmployeeV2] {
	t.Helper()
	m, err := New(Spec[Employee, EmployeeV2]{Name: name, Service: f.b.Clients.Tables, Source: f.src, Target: f.tgt,
		Keys: hashKeys, Transform: upgrade, Control: control}, testOptions())
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func key(p, i int) (string, string) { return fmt.Sprintf("dept%02d", p), fmt.Sprintf("emp%06d", i) }

// seed writes n employees over parts departments directly to the old layout.
func (f *fix) seed(t testing.TB, n, parts int) {
	t.Helper()
	items := make([]*Employee, n)
	for i := range items {
		pk, rk := key(i%parts, i)
		items[i] = &Employee{Department: pk, EmployeeID: rk, Name: "n" + rk, Seq: 1}
	}
	if err := f.src.BulkWrite(f.b.Ctx, items, nil); err != nil {
		t.Fatal(err)
	}
}

// advanceTo advances the migration until it is at stage.
func (f *fix) advanceTo(t testing.TB, stage Stage) {
	t.Helper()
	for {
		st, err := f.m.load(f.b.Ctx)
		if err != nil {
			t.Fatal(err)
		}
		if st.Stage == stage {
			return
		}
		if _, err := f.m.Advance(f.b.Ctx); err != nil {
			t.Fatalf("advance from %s: %v", st.Stage, err)
		}
	}
}

// rows reads every row of a table directly: the old layout's entities (no migration
// property) and the copies.
func (f *fix) rows(t testing.TB, table string) (old, copies []codec.Entity) {
	t.Helper()
	raw, err := repo.New[codec.Entity](f.b.Direct.Tables, table, nil)
	if err != nil {
		t.Fatal(err)
	}
	all, err := raw.Collect(f.b.Ctx, repo.Query{})
	if err != nil && !isTableNotFound(err) {
		t.Fatal(err)
	}
	for _, e := range all {
		if e.Properties[PropMigration] != nil {
			copies = append(copies, e)
		} else {
			old = append(old, e)
		}
	}
	return old, copies
}

// model is what the application was told: the last acknowledged write of each key.
type model struct {
	mu   sync.Mutex
	seq  map[[2]string]int64 // live entities: their last Seq
	dead map[[2]string]bool
}

func newModel() *model { return &model{seq: map[[2]string]int64{}, dead: map[[2]string]bool{}} }

func (md *model) set(pk, rk string, seq int64) {
	md.mu.Lock()
	defer md.mu.Unlock()
	md.seq[[2]string{pk, rk}] = seq
	delete(md.dead, [2]string{pk, rk})
}

func (md *model) del(pk, rk string) {
	md.mu.Lock()
	defer md.mu.Unlock()
	delete(md.seq, [2]string{pk, rk})
	md.dead[[2]string{pk, rk}] = true
}

// writer keeps writing through the migration until stop: each key has one writer
// (keys are split among the goroutines), a write is retried until it is acknowledged,
// and the model records it then. Deletes and re-inserts hit keys of "del" partitions.
type writer struct {
	f        *fix
	md       *model
	keys     [][2]string
	deletes  bool
	writes   atomic.Int64
	failures atomic.Int64
}

func (w *writer) run(ctx context.Context, t testing.TB, goroutines int, stop <-chan struct{}) *sync.WaitGroup {
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(g), 7))
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
						err := w.f.m.Delete(ctx, k[0], k[1], nil)
						if errors.Is(err, repo.ErrNotFound) {
							return nil
						}
						return err
					})
					w.md.del(k[0], k[1])
					continue
				}
				v := &Employee{Department: k[0], EmployeeID: k[1], Name: "n" + k[1], Seq: seqs[k]}
				w.retry(ctx, t, func() error { return w.f.m.Upsert(ctx, v) })
				w.md.set(k[0], k[1], seqs[k])
				w.writes.Add(1)
			}
		})
	}
	return &wg
}

func (w *writer) retry(ctx context.Context, t testing.TB, do func() error) {
	for {
		err := do()
		if err == nil || ctx.Err() != nil {
			return
		}
		if errors.Is(err, repo.ErrInvalidInput) {
			t.Errorf("writer: %v", err)
			return
		}
		w.failures.Add(1)
	}
}

func fnv32(s string) uint32 {
	h := fnv.New32a()
	h.Write([]byte(s))
	return h.Sum32()
}

// reader reads keys through the migration until stop and fails on a gap (not found for
// a key that is never deleted) or a step back (a lower Seq after a higher one).
type reader struct {
	f      *fix
	keys   [][2]string
	reads  atomic.Int64
	mu     sync.Mutex
	errs   []string
	failed int
	stages map[Stage]bool
}

func (rd *reader) run(ctx context.Context, stop <-chan struct{}) *sync.WaitGroup {
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
				v, err := rd.f.m.Get(ctx, k[0], k[1])
				rd.reads.Add(1)
				rd.mu.Lock()
				if rd.stages != nil {
					rd.stages[rd.f.m.cached().Stage] = true
				}
				switch {
				case errors.Is(err, repo.ErrNotFound), errors.Is(err, repo.ErrInvalidInput):
					rd.errs = append(rd.errs, fmt.Sprintf("%v: %v", k, err))
				case err != nil:
					rd.failed++ // a read that timed out or ran out of retries: no answer, no gap
				case err == nil && v.Seq < seen[k]:
					rd.errs = append(rd.errs, fmt.Sprintf("%v: Seq %d after %d", k, v.Seq, seen[k]))
				case err == nil:
					seen[k] = v.Seq
				}
				rd.mu.Unlock()
			}
		}
	})
	return &wg
}

func (rd *reader) check(t testing.TB) {
	t.Helper()
	rd.mu.Lock()
	defer rd.mu.Unlock()
	if len(rd.errs) > 0 {
		t.Errorf("reader: %d gaps or steps back, first: %v", len(rd.errs), rd.errs[:min(5, len(rd.errs))])
	}
}

// mustHoldExactly checks the end of a migration: the old layout empty, the new layout
// exactly the model's live entities at their last Seq, each detached.
func (f *fix) mustHoldExactly(t testing.TB, md *model) {
	t.Helper()
	old, _ := f.rows(t, f.src.Name())
	_, copies := f.rows(t, f.tgt.Name())
	if len(old) != 0 {
		t.Errorf("old layout holds %d entities, want none", len(old))
	}
	got := map[[2]string]int64{}
	for _, e := range copies {
		spk, _ := e.Properties[PropSourcePK].(string)
		srk, _ := e.Properties[PropSourceRK].(string)
		if d, _ := e.Properties[PropDetached].(bool); !d {
			t.Errorf("copy of (%s, %s) not detached", spk, srk)
		}
		got[[2]string{spk, srk}] = seqOf(e)
	}
	md.mu.Lock()
	defer md.mu.Unlock()
	bad := 0
	for k, seq := range md.seq {
		if got[k] != seq {
			bad++
			if bad < 5 {
				t.Errorf("%v: new layout Seq %d, want %d", k, got[k], seq)
			}
		}
	}
	for k := range md.dead {
		if _, ok := got[k]; ok {
			t.Errorf("%v: deleted, yet in the new layout", k)
		}
	}
	if len(got) != len(md.seq) {
		t.Errorf("new layout holds %d entities, want %d", len(got), len(md.seq))
	}
}

// mustHoldOldOnly checks the end of an abort: the old layout exactly the model, no copy.
func (f *fix) mustHoldOldOnly(t testing.TB, md *model) {
	t.Helper()
	old, _ := f.rows(t, f.src.Name())
	_, copies := f.rows(t, f.tgt.Name())
	if len(copies) != 0 {
		t.Errorf("%d copies left after the abort", len(copies))
	}
	got := map[[2]string]int64{}
	for _, e := range old {
		got[[2]string{e.PartitionKey, e.RowKey}] = seqOf(e)
	}
	md.mu.Lock()
	defer md.mu.Unlock()
	for k, seq := range md.seq {
		if got[k] != seq {
			t.Errorf("%v: old layout Seq %d, want %d", k, got[k], seq)
		}
	}
	if len(got) != len(md.seq) {
		t.Errorf("old layout holds %d entities, want %d", len(got), len(md.seq))
	}
}

func seqOf(e codec.Entity) int64 {
	switch v := e.Properties["Seq"].(type) {
	case int64:
		return v
	case int32:
		return int64(v)
	case string:
		n, _ := strconv.ParseInt(v, 10, 64)
		return n
	}
	return -1
}

// scale is the acceptance test's entity count: 2,000 over 20 partitions (100 each, two
// pages of the scan, so the range jobs checkpoint and continue while the workers die),
// 20,000 in `make soak` (testenv.Scale).
func scale(testing.TB) int { return testenv.Scale(2000, 20000) }

// settled waits until the current stage's rules apply in every process.
func (f *fix) settled(t testing.TB) State {
	t.Helper()
	st, err := f.m.load(f.b.Ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.m.waitSettled(f.b.Ctx, st); err != nil {
		t.Fatal(err)
	}
	return st
}

// mustBeCurrent checks that the copy of (pk, rk) records the old entity's current version
// and holds its Seq, or that neither exists.
func (f *fix) mustBeCurrent(t testing.TB, pk, rk string) {
	t.Helper()
	ctx := f.b.Ctx
	s, err := f.m.readSource(ctx, pk, rk)
	if err != nil {
		t.Fatal(err)
	}
	c, err := f.m.readCopy(ctx, pk, rk)
	if err != nil {
		t.Fatal(err)
	}
	switch {
	case !s.found && c.found:
		t.Errorf("(%s, %s): deleted, yet its copy is there", pk, rk)
	case s.found && !c.found:
		t.Errorf("(%s, %s): no copy", pk, rk)
	case s.found && (c.srcETag != s.etag || seqOf(*c.e) != seqOf(*s.e)):
		t.Errorf("(%s, %s): copy Seq %d of %s, old entity Seq %d at %s", pk, rk, seqOf(*c.e), c.srcETag, seqOf(*s.e), s.etag)
	}
}

// planned seeds n entities over parts partitions, plans, and returns their keys and the
// model.
func (f *fix) planned(t testing.TB, n, parts int) ([][2]string, *model) {
	t.Helper()
	f.seed(t, n, parts)
	md := newModel()
	var keys [][2]string
	for i := range n {
		pk, rk := key(i%parts, i)
		keys = append(keys, [2]string{pk, rk})
		md.set(pk, rk, 1)
	}
	if err := f.m.Plan(f.b.Ctx); err != nil {
		t.Fatal(err)
	}
	return keys, md
}

// mustTable is a repo table of T named name on the bed's Clients (as they are now).
func mustTable[T any](t testing.TB, f *fix, name string) *repo.Table[T] {
	t.Helper()
	tb, err := repo.New[T](f.b.Clients.Tables, name, f.b.RepoOptions())
	if err != nil {
		t.Fatal(err)
	}
	return tb
}
