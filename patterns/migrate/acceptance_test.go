package migrate

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tablepatterns/tablepatterns/internal/testenv"
)

// worker is the test worker process (internal/killworker), built once for the kill
// tests that run at once and removed when the last of them ends.
var worker struct {
	mu    sync.Mutex
	dir   string
	users int
}

// buildWorker returns the test worker's binary, building it unless a running test did.
func buildWorker(t *testing.T) string {
	t.Helper()
	worker.mu.Lock()
	defer worker.mu.Unlock()
	if worker.users == 0 {
		dir, err := os.MkdirTemp("", "killworker")
		if err != nil {
			t.Fatal(err)
		}
		if out, err := exec.CommandContext(t.Context(), "go", "build", "-o", filepath.Join(dir, "killworker"), "./internal/killworker").CombinedOutput(); err != nil {
			os.RemoveAll(dir)
			t.Fatalf("go build: %v\n%s", err, out)
		}
		worker.dir = dir
	}
	worker.users++
	t.Cleanup(func() {
		worker.mu.Lock()
		defer worker.mu.Unlock()
		if worker.users--; worker.users == 0 {
			os.RemoveAll(worker.dir)
		}
	})
	return filepath.Join(worker.dir, "killworker")
}

// killLoop runs worker processes on queue one after another, each killed with SIGKILL
// at a random point (the kill's timing is the attack, not a wait for state) at most
// 1.5 s after its start, until stop. It counts the kills by the stage this process's
// view was at: every stage lasts at least its settle (over 2 s), so each sees kills.
func (f *fix) killLoop(t *testing.T, bin, queue string, stop <-chan struct{}) (*sync.WaitGroup, *killCount) {
	env := workerEnv(t, "MIGRATE_SOURCE="+f.src.Name(), "MIGRATE_TARGET="+f.tgt.Name(), "MIGRATE_CONTROL="+f.m.control.Name(),
		"MIGRATE_QUEUE="+queue, "MIGRATE_NAME="+f.m.spec.Name, "MIGRATE_PAGE_SIZE="+strconv.Itoa(f.m.opts.PageSize))
	return runKillLoop(t, bin, env, stop, func() Stage { return f.m.cached().Stage })
}

// workerEnv is the environment of the test worker process: the test's account and
// staleness bound (testOptions), and extra.
func workerEnv(t *testing.T, extra ...string) []string {
	o := testOptions()
	return append(append(os.Environ(),
		"AZURE_STORAGE_CONNECTION_STRING="+testenv.ConnectionString(t),
		"MIGRATE_REFRESH_MS="+strconv.Itoa(int(o.Refresh.Milliseconds())),
		"MIGRATE_WRITE_TIMEOUT_MS="+strconv.Itoa(int(o.WriteTimeout.Milliseconds())),
		"MIGRATE_CLOCK_SKEW_MS="+strconv.Itoa(int(o.ClockSkew.Milliseconds()))), extra...)
}

// runKillLoop runs the worker binary bin with env, one process after another, each
// killed with SIGKILL at a random point 0.3 to 1.5 s after its start (the kill's timing
// is the attack, not a wait for state), until stop; it counts each kill by the stage
// stage reports then, and fails the test on a worker's panic or error.
func runKillLoop(t *testing.T, bin string, env []string, stop <-chan struct{}, stage func() Stage) (*sync.WaitGroup, *killCount) {
	var wg sync.WaitGroup
	kills := &killCount{by: map[Stage]int{}}
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
			timer := time.NewTimer(300*time.Millisecond + rand.N(1200*time.Millisecond))
			stopped := false
			select {
			case <-timer.C:
			case <-stop:
				stopped = true
			}
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			kills.add(stage())
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
	return &wg, kills
}

// killCount counts the worker processes killed, by stage.
type killCount struct {
	mu sync.Mutex
	by map[Stage]int
}

func (k *killCount) add(s Stage) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.by[s]++
}

// mustCover fails unless a worker process was killed during each of stages.
func (k *killCount) mustCover(t *testing.T, stages ...Stage) {
	t.Helper()
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, s := range stages {
		if k.by[s] == 0 {
			t.Errorf("no worker process killed during %s (kills by stage: %v)", s, k.by)
		}
	}
}

func (k *killCount) String() string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return fmt.Sprint(k.by)
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
	t.Parallel()
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
				if err := f.m.EnqueueJob(f.b.Ctx, q, j); err != nil {
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
	kills.mustCover(t, Backfill, Verify, CleanUp)
	t.Logf("%d entities: writes %d (+%d), reads %d, worker processes killed by stage %v", n, w1.writes.Load(), w2.writes.Load(), rd.reads.Load(), kills)
}
