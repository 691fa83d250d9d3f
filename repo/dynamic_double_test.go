package repo_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"

	"github.com/tablepatterns/tablepatterns/internal/testenv"
	"github.com/tablepatterns/tablepatterns/repo"
)

// Under minimal metadata the service leaves another application's whole Edm.Double
// unannotated; a type with an extra map that read it as Int32 and wrote it back with a
// Replace would stop that application's "Price eq 5.0" from matching. Types with an extra
// map read with full metadata, where the service annotates the double.
//
// Azurite neither annotates doubles nor keeps a whole double a double (DESIGN.md, "Traps"),
// so the service is played by a loopback test server answering as Azure does.
func TestExtraMapReadsWithFullMetadata(t *testing.T) {
	t.Parallel()
	type Item struct {
		PK    string         `table:",pk"`
		RK    string         `table:",rk"`
		Name  string         `table:",omitempty"`
		Extra map[string]any `table:",extra"`
		ETag  string         `table:",etag"`
	}
	var mu sync.Mutex
	var accepts, bodies []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		accepts = append(accepts, r.Header.Get("Accept"))
		bodies = append(bodies, string(body))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json;odata=fullmetadata")
		w.Header().Set("ETag", `W/"datetime'2026-11-23T00%3A00%3A00Z'"`)
		if r.Method == http.MethodGet {
			full := strings.Contains(r.Header.Get("Accept")+r.URL.Query().Get("$format"), "fullmetadata")
			price := `"Price":5` // minimal metadata: a whole double, unannotated
			if full {
				price = `"Price@odata.type":"Edm.Double","Price":5.0`
			}
			_, _ = io.WriteString(w, `{"odata.etag":"W/\"datetime'2026-11-23T00%3A00%3A00Z'\"","PartitionKey":"p","RowKey":"r",`+price+`}`)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(srv.Close)
	svc, err := aztables.NewServiceClientWithNoCredential(srv.URL+"/acct", repo.TableClientOptions(&aztables.ClientOptions{ClientOptions: testenv.ClientOptions()}))
	if err != nil {
		t.Fatal(err)
	}
	items, err := repo.New[Item](svc, "Items", nil)
	if err != nil {
		t.Fatal(err)
	}
	it, err := items.Get(t.Context(), "p", "r")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := it.Extra["Price"].(float64); !ok {
		t.Fatalf("Price read as %T (Accept %q), want float64", it.Extra["Price"], accepts)
	}
	it.Name = "pen"
	if err := items.Update(t.Context(), &it, nil); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if !strings.Contains(bodies[len(bodies)-1], `"Price@odata.type":"Edm.Double"`) {
		t.Fatalf("the replace wrote Price back as %s", bodies[len(bodies)-1])
	}
}
