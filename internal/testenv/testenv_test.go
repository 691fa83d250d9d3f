package testenv_test

import (
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"

	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
	"github.com/tablepatterns/tablepatterns/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

var (
	tableRule = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9]{2,62}$`)
	// Queue and container names: 3-63 lowercase letters, digits and dashes, starting and
	// ending with a letter or digit, no two dashes in a row.
	dashedRule = regexp.MustCompile(`^[a-z0-9](?:[a-z0-9]|-[a-z0-9])+$`)
)

func TestNamesAreValidAndUnique(t *testing.T) {
	t.Parallel()
	odd := []string{
		"plain",
		"With_Under/Slash and spaces",
		"---",
		"ÄÖÜ non ascii 日本",
		"9starts-with-digit",
		strings.Repeat("VeryLongTestName", 10),
		"a--b__c",
	}
	var mu sync.Mutex
	seen := map[string]string{}
	record := func(t *testing.T, kind, name string) {
		mu.Lock()
		defer mu.Unlock()
		key := strings.ToLower(name) // table names are case-insensitive
		if prev, dup := seen[key]; dup {
			t.Errorf("%s name %q already given (%s)", kind, name, prev)
		}
		seen[key] = kind + " " + t.Name()
	}
	for _, sub := range odd {
		t.Run(sub, func(t *testing.T) {
			t.Parallel()
			for range 50 {
				tn, qn, cn := testenv.TableName(t), testenv.QueueName(t), testenv.ContainerName(t)
				if !tableRule.MatchString(tn) || len(tn) > testenv.MaxNameLen {
					t.Errorf("table name %q invalid", tn)
				}
				for _, n := range []string{qn, cn} {
					if !dashedRule.MatchString(n) || len(n) < 3 || len(n) > testenv.MaxNameLen {
						t.Errorf("queue/container name %q invalid", n)
					}
					if !dashedRule.MatchString(n+"-poison") || len(n+"-poison") > 63 {
						t.Errorf("%q-poison invalid", n)
					}
				}
				record(t, "table", tn)
				record(t, "queue", qn)
				record(t, "container", cn)
			}
		})
	}
}

func TestTableCreatesAndCleansUp(t *testing.T) {
	t.Parallel()
	name := testenv.TableName(t)
	t.Run("use", func(t *testing.T) {
		tc := testenv.Table(t, name)
		if _, err := tc.AddEntity(t.Context(), []byte(`{"PartitionKey":"p","RowKey":"r"}`), nil); err != nil {
			t.Fatal(err)
		}
	})
	// The subtest's cleanup deleted the table.
	filter := "TableName eq '" + name + "'"
	pager := testenv.TableService(t).NewListTablesPager(&aztables.ListTablesOptions{Filter: &filter})
	for pager.More() {
		page, err := pager.NextPage(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Tables) != 0 {
			t.Fatalf("table %s still exists after cleanup", name)
		}
	}
}

func TestProxiesRouteAllThreeServices(t *testing.T) {
	t.Parallel()
	ps := testenv.Proxies(t)

	// Table.
	name := testenv.TableName(t)
	testenv.Table(t, name)
	tc := testenv.TableServiceFrom(t, ps.ConnectionString).NewClient(name)
	if _, err := tc.AddEntity(t.Context(), []byte(`{"PartitionKey":"o'brien","RowKey":"100% ü"}`), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := tc.GetEntity(t.Context(), "o'brien", "100% ü", nil); err != nil {
		t.Fatal(err)
	}

	// Queue.
	qname := testenv.QueueName(t)
	q := testenv.QueueServiceFrom(t, ps.ConnectionString).NewQueueClient(qname)
	if _, err := q.Create(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = testenv.QueueService(t).NewQueueClient(qname).Delete(context.Background(), nil) })
	if _, err := q.EnqueueMessage(t.Context(), "hello", nil); err != nil {
		t.Fatal(err)
	}
	got, err := q.DequeueMessage(t.Context(), nil)
	if err != nil || len(got.Messages) != 1 || *got.Messages[0].MessageText != "hello" {
		t.Fatalf("dequeue: %v %+v", err, got)
	}

	// Blob, including a HEAD whose Content-Length is the blob's size.
	cname := testenv.ContainerName(t)
	bc := testenv.BlobServiceFrom(t, ps.ConnectionString)
	if _, err := bc.CreateContainer(t.Context(), cname, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = testenv.BlobService(t).DeleteContainer(context.Background(), cname, nil) })
	data := bytes.Repeat([]byte("x"), 12345)
	if _, err := bc.UploadBuffer(t.Context(), cname, "b", data, nil); err != nil {
		t.Fatal(err)
	}
	props, err := bc.ServiceClient().NewContainerClient(cname).NewBlobClient("b").GetProperties(t.Context(), nil)
	if err != nil || props.ContentLength == nil || *props.ContentLength != int64(len(data)) {
		t.Fatalf("properties: %v, length %v", err, props.ContentLength)
	}
	dl, err := bc.DownloadStream(t.Context(), cname, "b", &azblob.DownloadStreamOptions{})
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(dl.Body)
	_ = dl.Body.Close()
	if err != nil || !bytes.Equal(body, data) {
		t.Fatalf("download: %v, %d bytes", err, len(body))
	}

	for kind, p := range map[string]*faultproxy.Proxy{"table": ps.Table, "queue": ps.Queue, "blob": ps.Blob} {
		if p.Count() == 0 {
			t.Errorf("no request went through the %s proxy", kind)
		}
	}
	if n := ps.Queue.CountMatching(func(r faultproxy.RequestInfo) bool { return r.Method == "POST" }); n != 1 {
		t.Errorf("%d enqueues counted, want 1", n)
	}
}

func TestServerAndConnectionString(t *testing.T) {
	t.Parallel()
	s := testenv.Server(t)
	if s.AccountName == "" || s.TableURL == "" || testenv.ConnectionString(t) != s.ConnectionString {
		t.Fatalf("server %q %q", s.AccountName, s.TableURL)
	}
}

// A pure test run (none of the tests asks for storage) must not need Azurite: the server
// starts on first use. This test runs a copy of the package's test binary with a PATH and
// module root without Azurite and a test that needs no storage.
func TestPureTestsRunWithoutAzurite(t *testing.T) {
	t.Parallel()
	bin, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		run      string
		wantFail bool
	}{
		{run: "^TestNamesAreValidAndUnique$"},
		{run: "^TestServerAndConnectionString$", wantFail: true},
	} {
		cmd := exec.CommandContext(t.Context(), bin, "-test.run", tc.run, "-test.count=1")
		cmd.Dir = dir
		cmd.Env = append(filteredEnv(), "PATH="+dir)
		out, err := cmd.CombinedOutput()
		switch {
		case !tc.wantFail && err != nil:
			t.Errorf("%s without Azurite: %v\n%s", tc.run, err, out)
		case tc.wantFail && err == nil:
			t.Errorf("%s passed without Azurite:\n%s", tc.run, out)
		case tc.wantFail && !strings.Contains(string(out), "npm install --save-dev azurite"):
			t.Errorf("%s failed without saying how to install Azurite:\n%s", tc.run, out)
		}
	}
}

// filteredEnv is the environment without PATH and the variable that points tests at
// another account.
func filteredEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "PATH=") || strings.HasPrefix(kv, testenv.EnvConnectionString+"=") {
			continue
		}
		env = append(env, kv)
	}
	return env
}
