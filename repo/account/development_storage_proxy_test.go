package account_test

import (
	"context"
	"testing"

	"github.com/tablepatterns/tablepatterns/repo/account"
)

// UseDevelopmentStorage with a DevelopmentStorageProxyUri addresses the emulator's ports
// on the proxy's host, an IPv6 literal included (in brackets, as a URL must write it).
func TestDevelopmentStorageProxyUriAddressesItsHostIPv6Included(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, c := range []struct{ proxy, table, queue, blob string }{
		{"http://[::1]", "http://[::1]:10002", "http://[::1]:10001", "http://[::1]:10000"},
		{"http://[fd00::5]:8080/x", "http://[fd00::5]:10002", "http://[fd00::5]:10001", "http://[fd00::5]:10000"},
		{"https://azurite", "https://azurite:10002", "https://azurite:10001", "https://azurite:10000"},
	} {
		rec := &recorder{}
		cl, err := account.NewClients("UseDevelopmentStorage=true;DevelopmentStorageProxyUri="+c.proxy, &account.ClientOptions{Transport: rec})
		if err != nil {
			t.Errorf("%s: %v", c.proxy, err)
			continue
		}
		for _, s := range []struct {
			want string
			send func()
		}{
			{c.table, func() { _, _ = cl.Tables.NewClient("tbl").GetEntity(ctx, "p", "r", nil) }},
			{c.queue, func() { _, _ = cl.Queues.NewQueueClient("q").GetProperties(ctx, nil) }},
			{c.blob, func() { _, _ = cl.Blobs.ServiceClient().GetProperties(ctx, nil) }},
		} {
			rec.hosts = nil
			s.send()
			if len(rec.hosts) == 0 || rec.hosts[0] != s.want {
				t.Errorf("%s: addressed %v, want %s", c.proxy, rec.hosts, s.want)
			}
		}
	}
}
