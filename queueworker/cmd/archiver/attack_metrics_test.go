package main

import (
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/tablepatterns/tablepatterns/queueworker"
)

// -metrics-addr serves an unauthenticated page ("bind to a private address"), yet an
// address without a host, the form the flag's own error message suggested (":9464"),
// listened on every interface, silently. Expected: a host-less address is refused or
// taken as loopback (an operator who wants every interface names 0.0.0.0). A job whose
// kind is forged also reached that page as a label value, control characters included.
//
// The fix refuses a host-less address (exit 2, a usage error that names the host to
// give): the first part asserts that refusal, where the original test could only wait
// for an endpoint that a refusing archiver never opens. The forged kind is then scraped
// from an archiver bound to loopback by name; its delivery is recorded under the fixed
// kind "unregistered" (queueworker.UnregisteredKind), not under its own text, so the
// wait is for that series (the original waited for a `kind="evil` series, which is the
// defect itself).
func TestAttackMetricsAddrWithoutHostListensOnEveryInterface(t *testing.T) {
	t.Parallel()
	kb := newKillBed(t)
	bin := binary(t)
	refused := start(t, bin, nil, "run", "-allow-any", "-queue", kb.queue, "-metrics-addr", ":0")
	err := refused.cmd.Wait()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 2 || !strings.Contains(refused.stderr.String(), "every interface") {
		t.Errorf("-metrics-addr :0: %v, stderr %q; want exit 2 naming the every-interface risk", err, refused.stderr.String())
	}
	if endpoint := regexp.MustCompile(`http://[^ "]+/metrics`).FindString(refused.stderr.String()); endpoint != "" {
		t.Errorf("-metrics-addr :0 served %s", endpoint)
	}

	kind := "evil\x1b]0;pwned\x07\x1b[2J"
	if _, err := queueworker.Enqueue(kb.ctx, kb.client, kind, "", map[string]int{"n": 1}, nil); err != nil {
		t.Fatal(err)
	}
	p := start(t, bin, nil, "run", "-allow-any", "-queue", kb.queue, "-metrics-addr", "127.0.0.1:0")
	endpoint := regexp.MustCompile(`http://[^ "]+/metrics`)
	p.waitFor(t, "the metrics endpoint", func() bool { return endpoint.MatchString(p.stderr.String()) })
	u, err := url.Parse(endpoint.FindString(p.stderr.String()))
	if err != nil {
		t.Fatal(err)
	}
	host, port, _ := net.SplitHostPort(u.Host)
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		t.Errorf("-metrics-addr 127.0.0.1:0 listens on %q", host)
	}
	var body string
	p.waitFor(t, "the forged kind's delivery in the scrape", func() bool {
		resp, err := http.Get("http://127.0.0.1:" + port + "/metrics")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		body = string(b)
		return strings.Contains(body, `tablepatterns_message_kind="`+queueworker.UnregisteredKind+`"`) || strings.Contains(body, `tablepatterns_message_kind="evil`)
	})
	if strings.Contains(body, "\x1b") {
		t.Errorf("the Prometheus page carries a terminal escape from a queued job's kind")
	}
	if strings.Contains(body, `tablepatterns_message_kind="evil`) {
		t.Errorf("the Prometheus page has a series for a forged kind")
	}
}
