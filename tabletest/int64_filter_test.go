package tabletest_test

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
)

// The package documentation's claim about Int64 in filters, on Azurite 3.37.0: a filter
// with an Edm.Int64 literal (500L) answers 500 as soon as it is evaluated on an entity
// whose property of that name holds a JSON number (Edm.Int32, Edm.Double) or a boolean,
// and answers normally for every other stored type (Edm.Int64 itself, strings, which it
// then compares as numbers, DateTime, Guid, Binary, or no such property). The reverse,
// an Int32 literal (500) against an Edm.Int64 property, answers normally and compares
// the values.
func TestAzuriteAnswers500ForAnInt64LiteralAgainstANumberProperty(t *testing.T) {
	t.Parallel()
	s := shared.Server(t)
	c, err := s.Clients()
	if err != nil {
		t.Fatal(err)
	}
	for i, tc := range []struct {
		stored string // the entity's JSON
		int64  int    // the status of "N lt 500L": 200 or 500
		int32  int    // entities "N lt 500" matches
	}{
		{`"N":"5","N@odata.type":"Edm.Int64"`, 200, 1},
		{`"N":5`, 500, 1},
		{`"N":5.5`, 500, 1},
		{`"N":true`, 500, 1},
		{`"N":"5"`, 200, 1},
		{`"N":"2020-01-01T00:00:00Z","N@odata.type":"Edm.DateTime"`, 200, 0},
		{`"N":"c9da6455-213d-42c9-9a79-3e9149a57833","N@odata.type":"Edm.Guid"`, 200, 0},
		{`"N":"AQID","N@odata.type":"Edm.Binary"`, 200, 0},
		{`"M":1`, 200, 0},
	} {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			name := fmt.Sprintf("int64filter%d%s", i, strings.ReplaceAll(t.Name()[:10], "/", ""))
			tbl := c.Tables.NewClient(name)
			if _, err := tbl.CreateTable(t.Context(), nil); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _, _ = tbl.Delete(t.Context(), nil) })
			if _, err := tbl.AddEntity(t.Context(), []byte(`{"PartitionKey":"p","RowKey":"r",`+tc.stored+`}`), nil); err != nil {
				t.Fatal(err)
			}
			query := func(f string) (int, int) {
				resp, err := tbl.NewListEntitiesPager(&aztables.ListEntitiesOptions{Filter: &f}).NextPage(t.Context())
				var re *azcore.ResponseError
				if errors.As(err, &re) {
					return re.StatusCode, 0
				}
				if err != nil {
					t.Fatal(err)
				}
				return http.StatusOK, len(resp.Entities)
			}
			if status, _ := query("N lt 500L"); status != tc.int64 {
				t.Errorf("%s: N lt 500L answered %d, want %d", tc.stored, status, tc.int64)
			}
			if status, n := query("N lt 500"); status != http.StatusOK || n != tc.int32 {
				t.Errorf("%s: N lt 500 answered %d with %d entities, want 200 with %d", tc.stored, status, n, tc.int32)
			}
		})
	}
}
