package repo_test

import (
	"io"
	"net"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/tablepatterns/tablepatterns/internal/testenv"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/repo/account"
)

// closingRelay is a TCP relay in front of the table endpoint whose first connection is
// closed by the "server" while the client is still writing its request: after headMax
// bytes of it the relay half-closes toward the client (a FIN, as a server whose keep-alive
// timeout ran out sends) and drains the rest, forwarding nothing. Go's transport then sees
// its connection end under a POST whose body it is writing; it does not replay such a
// request itself, so the retry layer must. Later connections are relayed untouched.
type closingRelay struct {
	ln      net.Listener
	target  string
	headMax int
	conns   atomic.Int32
	cut     atomic.Int32 // connections closed mid-request
	wg      sync.WaitGroup

	mu   sync.Mutex
	open []net.Conn // closed by the test's cleanup: pooled connections stay open otherwise
}

func (r *closingRelay) track(c net.Conn) {
	r.mu.Lock()
	r.open = append(r.open, c)
	r.mu.Unlock()
}

func (r *closingRelay) close() {
	_ = r.ln.Close()
	r.mu.Lock()
	for _, c := range r.open {
		_ = c.Close()
	}
	r.mu.Unlock()
	r.wg.Wait()
}

func newClosingRelay(t *testing.T, target string, headMax int) *closingRelay {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &closingRelay{ln: ln, target: target, headMax: headMax}
	r.wg.Add(1)
	go r.serve()
	t.Cleanup(r.close)
	return r
}

func (r *closingRelay) serve() {
	defer r.wg.Done()
	for {
		c, err := r.ln.Accept()
		if err != nil {
			return
		}
		r.track(c)
		first := r.conns.Add(1) == 1
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			defer c.Close()
			if first {
				if _, err := io.ReadFull(c, make([]byte, r.headMax)); err != nil {
					return
				}
				r.cut.Add(1)
				_ = c.(*net.TCPConn).CloseWrite()
				_, _ = io.Copy(io.Discard, c)
				return
			}
			up, err := net.Dial("tcp", r.target)
			if err != nil {
				return
			}
			defer up.Close()
			r.track(up)
			done := make(chan struct{})
			go func() { _, _ = io.Copy(up, c); _ = up.(*net.TCPConn).CloseWrite(); close(done) }()
			_, _ = io.Copy(c, up)
			_ = c.(*net.TCPConn).CloseWrite()
			<-done
		}()
	}
}

// A transaction whose connection the server closes while its body is being written is
// retried and committed exactly once: "use of closed network connection" (and the resets
// and broken pipes the same close causes) is a transient transport failure, not an answer.
// CI met it against Azurite, whose keep-alive timeout (5 s) can close a pooled connection
// just as a bulk write reuses it.
func TestSubmitRetriesConnectionClosedWhileWriting(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	s := testenv.Server(t)
	u, err := url.Parse(s.TableURL)
	if err != nil {
		t.Fatal(err)
	}
	relay := newClosingRelay(t, u.Host, 16<<10)
	cs := s.ConnectionStringWith("http://"+relay.ln.Addr().String()+u.Path, s.QueueURL, s.BlobURL)
	clients, err := account.NewClients(cs, nil)
	if err != nil {
		t.Fatal(err)
	}
	b.clients = clients
	emps := table[Employee](t, b, &repo.Options{})
	const n = 100
	actions := make([]repo.Action, n)
	for i := range actions {
		e := employee("closed", strings.Repeat("r", 3)+string(rune('A'+i/26))+string(rune('a'+i%26)))
		e.FirstName = strings.Repeat("x", 16<<10) // 1.6 MiB of body: still being written at the cut
		actions[i] = emps.UpsertAction(e, nil)
	}
	if _, err := repo.Submit(b.ctx, actions...); err != nil {
		t.Fatalf("Submit over a connection closed mid-body: %v", err)
	}
	if relay.cut.Load() != 1 {
		t.Fatalf("the relay cut %d connections mid-request, want 1: the test proved nothing", relay.cut.Load())
	}
	got := 0
	for e, err := range emps.Query(b.ctx, repo.Query{}) {
		if err != nil {
			t.Fatal(err)
		}
		if e.Department == "closed" && len(e.FirstName) == 16<<10 {
			got++
		}
	}
	if got != n {
		t.Fatalf("%d of %d entities stored after the retried transaction", got, n)
	}
}
