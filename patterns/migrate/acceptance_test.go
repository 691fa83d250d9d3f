package migrate

import (
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tablepatterns/tablepatterns/internal/testenv"
)

// buildWorker builds the test worker process (internal/killworker).
func buildWorker(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "killworker")
	if out, err := exec.CommandContext(t.Context(), "go", "build", "-o", bin, "./internal/killworker").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// killLoop runs worker processes on queue one after another, each killed with SIGKILL
// at a random point (the kill's timing is the attack, not a wait for state), until stop.
func (f *fix) killLoop(t *testing.T, bin, queue string, stop <-chan struct{}) (*sync.WaitGroup, *atomic.Int64) {
	o := testOptions()
	env := append(os.Environ(),
		"AZURE_STORAGE_CONNECTION_STRING="+testenv.ConnectionString(t),
		"MIGRATE_SOURCE="+f.src.Name(), "MIGRATE_TARGET="+f.tgt.Name(), "MIGRATE_CONTROL="+f.m.control.Name(),
		"MIGRATE_QUEUE="+queue, "MIGRATE_NAME="+f.m.spec.Name,
		"MIGRATE_REFRESH_MS="+strconv.Itoa(int(o.Refresh.Milliseconds())),
		"MIGRATE_WRITE_TIMEOUT_MS="+strconv.Itoa(int(o.WriteTimeout.Milliseconds())),
		"MIGRATE_CLOCK_SKEW_MS="+strconv.Itoa(int(o.ClockSkew.Milliseconds())),
		"MIGRATE_PAGE_SIZE="+strconv.Itoa(f.m.opts.PageSize))
	var wg sync.WaitGroup
	var kills atomic.Int64
	wg.Go(func() {
		for {
			var stderr strings.Builder
			var mu sync.Mutex
			cmd := exec.CommandContext(t.Context(), bin)
			cmd.Env = env
			cmd.Stderr = writerFunc(func(p []byte) (int, error) { mu.Lock(); defer mu.Unlock(); return stderr.Write(p) })
			if err := cmd.Start(); err != nil {
				t.Error(err)
				return
			}
			timer := time.NewTimer(500*time.Millisecond + rand.N(2500*time.Millisecond))
			stopped := false
			select {
			case <-timer.C:
			case <-stop:
				stopped = true
			}
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			kills.Add(1)
			mu.Lock()
			if strings.Contains(stderr.String(), "panic") || strings.Contains(stderr.String(), "killworker:") {
				t.Errorf("worker process failed:\n%s", stderr.String())
			}
			mu.Unlock()
			if stopped {
				return
			}
		}
	})
	return &wg, &kills
}

type writerFunc func([]byte) (int, error)

func (w writerFunc) Write(p []byte) (int, error) { return w(p) }

// TestMigrationUnderLoadWithKilledWorkersEndsWithExactlyTheLatest is the acceptance test:
// 2,000 (20,000 in make soak) employees over 20 departments, a
// writer updating, inserting and deleting throughout, a reader reading, and worker
// processes running the range jobs from a queue, each killed with SIGKILL at a random
// point, while the migration goes through every stage. At the end the new layout holds
// exactly the latest version of every live entity and none that was deleted, the old
// layout is empty, and the reader saw no gap and no step back.
func TestMigrationUnderLoadWithKilledWorkersEndsWithExactlyTheLatest(t *testing.T) {
	n, parts := scale(t), 20
	f := setup(t, false, false)
	bin := buildWorker(t)
	keys, md := f.planned(t, n, parts)
	more := keys[50:]
	for i := n; i < n+n/10; i++ { // keys the writer inserts
		pk, rk := key(i%parts, i)
		more = append(more, [2]string{pk, rk})
	}
	q, queue := f.b.Queue()
	f.m.opts.Queue = q
	stop := make(chan struct{})
	w1 := &writer{f: f, md: md, keys: keys[:50]}
	w2 := &writer{f: f, md: md, keys: more, deletes: true}
	rd := &reader{f: f, keys: keys[:50], stages: map[Stage]bool{}}
	running := []*sync.WaitGroup{w1.run(f.b.Ctx, t, 1, stop), w2.run(f.b.Ctx, t, 3, stop), rd.run(f.b.Ctx, stop)}
	kl, kills := f.killLoop(t, bin, queue, stop)
	bounds := []string{"dept05", "dept10", "dept15"}
	for {
		st, err := f.m.load(f.b.Ctx)
		if err != nil {
			t.Fatal(err)
		}
		if st.Stage == Done {
			break
		}
		if kind, ok := jobOf[st.Stage]; ok {
			jobs, err := f.m.Jobs(kind, bounds...)
			if err != nil {
				t.Fatal(err)
			}
			for _, j := range jobs {
				if err := Enqueue(f.b.Ctx, q, j); err != nil {
					t.Fatal(err)
				}
			}
		}
		if _, err := f.m.Advance(f.b.Ctx); err != nil {
			t.Fatalf("advance from %s: %v", st.Stage, err)
		}
	}
	close(stop)
	for _, wg := range append(running, kl) {
		wg.Wait()
	}
	rd.check(t)
	f.mustHoldExactly(t, md)
	t.Logf("%d entities: writes %d (+%d), reads %d, worker processes killed %d", n, w1.writes.Load(), w2.writes.Load(), rd.reads.Load(), kills.Load())
}
