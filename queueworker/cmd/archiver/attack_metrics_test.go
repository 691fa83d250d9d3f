package main

import (
	"io"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/tablepatterns/tablepatterns/queueworker"
)

// -metrics-addr serves an unauthenticated page ("bind to a private address"), yet an
// address without a host, the form the flag's own error message suggests (":9464"),
// listens on every interface, silently. Expected: a host-less address is refused or
// taken as loopback (an operator who wants every interface names 0.0.0.0). A job whose
// kind is forged also reaches that page as a label value, control characters included.
func TestAttackMetricsAddrWithoutHostListensOnEveryInterface(t *testing.T) {
	t.Parallel()
	kb := newKillBed(t)
	kind := "evil\x1b]0;pwned\x07\x1b[2J"
	if _, err := queueworker.Enqueue(kb.ctx, kb.client, kind, "", map[string]int{"n": 1}, nil); err != nil {
		t.Fatal(err)
	}
	p := start(t, binary(t), nil, "run", "-allow-any", "-queue", kb.queue, "-metrics-addr", ":0")
	endpoint := regexp.MustCompile(`http://[^ "]+/metrics`)
	p.waitFor(t, "the metrics endpoint", func() bool { return endpoint.MatchString(p.stderr.String()) })
	u, err := url.Parse(endpoint.FindString(p.stderr.String()))
	if err != nil {
		t.Fatal(err)
	}
	host, port, _ := net.SplitHostPort(u.Host)
	var body string
	p.waitFor(t, "the forged kind's delivery in the scrape", func() bool {
		resp, err := http.Get("http://127.0.0.1:" + port + "/metrics")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		body = string(b)
		return strings.Contains(body, `tablepatterns_message_kind="evil`)
	})
	if strings.Contains(body, "\x1b") {
		t.Errorf("the Prometheus page carries a terminal escape from a queued job's kind")
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		t.Errorf("-metrics-addr :0 listens on %q (every interface), unauthenticated", host)
	}
}
