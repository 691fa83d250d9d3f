package migrate

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
	"github.com/tablepatterns/tablepatterns/patterns/internal/testbed"
	"github.com/tablepatterns/tablepatterns/repo"
)

// EmployeeV3 is the latest shape of a schema evolution without a key change: version 1
// held Name, version 2 split it into FirstName and LastName, version 3 added Email.
type EmployeeV3 struct {
	Department string `table:",pk"`
	EmployeeID string `table:",rk"`
	ETag       string `table:",etag"`
	FirstName  string
	LastName   string
	Email      string
	Seq        int64
}

var upgrades = []func(e *codec.Entity) error{
	func(e *codec.Entity) error { // 1 -> 2
		name, _ := e.Properties["Name"].(string)
		first, last, ok := strings.Cut(name, " ")
		if !ok {
			return errors.New("a Name without a space")
		}
		e.Properties["FirstName"], e.Properties["LastName"] = first, last
		delete(e.Properties, "Name")
		return nil
	},
	func(e *codec.Entity) error { // 2 -> 3
		first, _ := e.Properties["FirstName"].(string)
		last, _ := e.Properties["LastName"].(string)
		e.Properties["Email"] = strings.ToLower(first + "." + last + "@contoso.com")
		return nil
	},
}

type schemaFix struct {
	b   *testbed.Bed
	s   *Schema[EmployeeV3]
	raw *repo.Table[codec.Entity]
}

func setupSchema(t *testing.T, proxied, writeBack bool) *schemaFix {
	t.Helper()
	b := testbed.New(t, &testbed.Options{Proxied: proxied})
	tb := testbed.NewTable[EmployeeV3](b, nil)
	s, err := NewSchema(SchemaSpec[EmployeeV3]{Service: b.Clients.Tables, Table: tb, Upgrades: upgrades},
		&SchemaOptions{WriteBack: writeBack, Retry: testbed.FastRetry()})
	if err != nil {
		t.Fatal(err)
	}
	return &schemaFix{b: b, s: s, raw: b.Raw}
}

// seedVersions writes n entities directly, cycling through versions 1, 2 and 3.
func (f *schemaFix) seedVersions(t *testing.T, n int) {
	t.Helper()
	for i := range n {
		e := &codec.Entity{PartitionKey: fmt.Sprintf("dept%02d", i%5), RowKey: fmt.Sprintf("emp%06d", i), Properties: map[string]any{"Seq": int64(1)}}
		switch i % 3 {
		case 0:
			e.Properties["Name"] = fmt.Sprintf("Ann%d Lee", i)
		case 1:
			e.Properties["FirstName"], e.Properties["LastName"], e.Properties[DefaultVersionProperty] = fmt.Sprintf("Ann%d", i), "Lee", int32(2)
		default:
			e.Properties["FirstName"], e.Properties["LastName"], e.Properties["Email"] = fmt.Sprintf("Ann%d", i), "Lee", fmt.Sprintf("ann%d.lee@contoso.com", i)
			e.Properties[DefaultVersionProperty] = int32(3)
		}
		if err := f.raw.Insert(f.b.Ctx, e); err != nil {
			t.Fatal(err)
		}
	}
}

// mustAllBeLatest checks every stored entity is at the latest version with its
// upgraded properties, and the Seq the model says.
func (f *schemaFix) mustAllBeLatest(t *testing.T, seq map[string]int64) {
	t.Helper()
	all, err := f.raw.Collect(f.b.Ctx, repo.Query{})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range all {
		v, _ := e.Properties[DefaultVersionProperty].(int32)
		_, hasName := e.Properties["Name"]
		if v != 3 || hasName || e.Properties["Email"] == nil {
			t.Errorf("(%s, %s): version %d, Name kept %v, Email %v", e.PartitionKey, e.RowKey, v, hasName, e.Properties["Email"] != nil)
		}
		if want, ok := seq[e.RowKey]; ok && seqOf(e) != want {
			t.Errorf("(%s, %s): Seq %d, want %d", e.PartitionKey, e.RowKey, seqOf(e), want)
		}
	}
}

// TestLazyUpgradeReadsEveryVersionAsTheLatest: entities stored at versions 1, 2 and 3
// all read in the latest shape; with WriteBack each read of an older version stores
// the upgrade.
func TestLazyUpgradeReadsEveryVersionAsTheLatest(t *testing.T) {
	t.Parallel()
	f := setupSchema(t, false, true)
	f.seedVersions(t, 9)
	for i := range 9 {
		v, err := f.s.Get(f.b.Ctx, fmt.Sprintf("dept%02d", i%5), fmt.Sprintf("emp%06d", i))
		if err != nil {
			t.Fatal(err)
		}
		if v.FirstName != fmt.Sprintf("Ann%d", i) || v.LastName != "Lee" || v.Email != fmt.Sprintf("ann%d.lee@contoso.com", i) {
			t.Errorf("%d: read %+v", i, v)
		}
	}
	f.mustAllBeLatest(t, nil)
}

// TestUnknownSchemaVersionRefusedNotRead: an entity of a version newer than the latest
// (written by newer code) or not a version at all is refused, and the rewrite leaves it.
func TestUnknownSchemaVersionRefusedNotRead(t *testing.T) {
	t.Parallel()
	f := setupSchema(t, false, false)
	for i, v := range []any{int32(4), "3", int32(0)} {
		e := &codec.Entity{PartitionKey: "dept00", RowKey: fmt.Sprint(i), Properties: map[string]any{DefaultVersionProperty: v}}
		if err := f.raw.Insert(f.b.Ctx, e); err != nil {
			t.Fatal(err)
		}
		if _, err := f.s.Get(f.b.Ctx, "dept00", fmt.Sprint(i)); !isInvalid(err) {
			t.Errorf("version %v: Get = %v, want ErrInvalidInput", v, err)
		}
	}
	rep, err := f.s.RewriteAll(f.b.Ctx)
	if err != nil || rep.Unknown != 3 || rep.Rewritten != 0 {
		t.Fatalf("RewriteAll = %+v, %v; want 3 unknown, none rewritten", rep, err)
	}
}

// TestSchemaRewriteUnderWritesLostResponsesAndTwoRunsLosesNoWrite: two background
// rewrites run at once, a quarter of their replace responses lost after the service
// applied them, while a writer writes the latest version: every entity ends at the
// latest version and no write of the writer is replaced by an upgrade of an older one.
func TestSchemaRewriteUnderWritesLostResponsesAndTwoRunsLosesNoWrite(t *testing.T) {
	t.Parallel()
	f := setupSchema(t, true, false)
	f.seedVersions(t, 150)
	p := f.b.Proxy()
	p.SetSeed(5)
	p.AddRule(faultproxy.Rule{Name: "replace", Match: faultproxy.All(faultproxy.MethodIs(http.MethodPut), faultproxy.IsEntityWrite), Probability: 0.25, Action: faultproxy.DropAfterForward()})
	seq := map[string]int64{}
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := 0; i < 150; i += 2 {
			v := &EmployeeV3{Department: fmt.Sprintf("dept%02d", i%5), EmployeeID: fmt.Sprintf("emp%06d", i), FirstName: "New", LastName: "Writer", Email: "new.writer@contoso.com", Seq: 7}
			for f.s.Upsert(f.b.Ctx, v) != nil {
			}
			seq[v.EmployeeID] = 7
		}
	})
	for range 2 {
		wg.Go(func() {
			if _, err := f.s.RewriteAll(f.b.Ctx); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if p.Fired("replace") == 0 {
		t.Fatal("no response was lost: the attack did not happen")
	}
	f.mustAllBeLatest(t, seq)
}
