package tabletest_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/tablepatterns/tablepatterns/tabletest"
)

// An Env is shared by every test of a binary: the first user's context ending (a test
// with a short deadline, or t.Context() of a test that is finishing) must not poison it
// for every later test.
func TestEnvSurvivesItsFirstCallersEndedContext(t *testing.T) {
	env := tabletest.NewEnv(nil)
	defer env.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, first := env.Start(ctx)
	s, err := env.Start(context.Background())
	if err != nil {
		t.Fatalf("first Start with an ended context failed (%v), and the Env now fails every later user with a live context: %v", first, err)
	}
	_ = s
}

// Concurrent first use starts one server, on loopback only.
func TestEnvConcurrentFirstUseStartsOneLoopbackServer(t *testing.T) {
	env := tabletest.NewEnv(nil)
	defer env.Close()
	var wg sync.WaitGroup
	got := make([]*tabletest.Server, 16)
	for i := range got {
		wg.Add(1)
		go func(i int) { defer wg.Done(); got[i] = env.Server(t) }(i)
	}
	wg.Wait()
	for _, s := range got {
		if s != got[0] {
			t.Fatal("two servers started")
		}
	}
	for _, u := range []string{got[0].TableURL(), got[0].QueueURL(), got[0].BlobURL()} {
		pu, err := url.Parse(u)
		if err != nil {
			t.Fatal(err)
		}
		if ip := net.ParseIP(pu.Hostname()); ip == nil || !ip.IsLoopback() {
			t.Errorf("%s is not loopback", u)
		}
		// Not reachable on a non-loopback address of this host.
		addrs, _ := net.InterfaceAddrs()
		for _, a := range addrs {
			ipn, ok := a.(*net.IPNet)
			if !ok || ipn.IP.IsLoopback() || ipn.IP.To4() == nil {
				continue
			}
			c, err := net.Dial("tcp", net.JoinHostPort(ipn.IP.String(), pu.Port()))
			if err == nil {
				c.Close()
				t.Errorf("Azurite answers on %s:%s", ipn.IP, pu.Port())
			}
		}
	}
}

func TestEnvStartsLazilyAndOnce(t *testing.T) {
	t.Parallel()
	env := tabletest.NewEnv(nil)
	if env.Started() {
		t.Fatal("started before anyone asked")
	}
	s1 := env.Server(t)
	s2 := env.Server(t)
	if s1 != s2 || !env.Started() {
		t.Fatalf("two servers (%p, %p) or not started", s1, s2)
	}
	resp, err := s1.HTTPClient().Get(s1.TableURL() + "/Tables")
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	if err := env.Close(); err != nil {
		t.Fatal(err)
	}
	if env.Started() {
		t.Error("Started after Close")
	}
	if _, err := env.Start(t.Context()); err == nil {
		t.Error("Start after Close succeeded")
	}
	client := &http.Client{Timeout: time.Second}
	if resp, err := client.Get(s1.TableURL() + "/Tables"); err == nil {
		_ = resp.Body.Close()
		t.Error("server still answers after Close")
	}
}
