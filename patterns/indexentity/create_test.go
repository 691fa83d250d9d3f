package indexentity

import (
	"context"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/internal/testenv"
	"github.com/tablepatterns/tablepatterns/patterns/internal/testbed"
	"github.com/tablepatterns/tablepatterns/repo"
)

// Eventual.CreateIfNotExists creates the primary table and the store (TableStore's table,
// BlobStore's container), as the other patterns' CreateIfNotExists create theirs, so that
// the first write finds them; a second call is success.
func TestEventualCreateIfNotExistsCreatesTableAndStore(t *testing.T) {
	t.Parallel()
	for _, option := range []string{"option1-blob", "option3-table"} {
		t.Run(option, func(t *testing.T) {
			t.Parallel()
			b := &bed{Bed: testbed.New(t, &testbed.Options{NoTable: true}), t: t, log: zaptest.NewLogger(t, zaptest.Level(zap.WarnLevel))}
			b.emps = must(repo.New[Employee](b.Clients.Tables, b.Table, &repo.Options{Retry: fast, Logger: b.log}))
			storeTable := testenv.TableName(t)
			t.Cleanup(func() {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				_ = b.emps.DeleteTable(ctx)
				_, _ = b.Direct.Tables.DeleteTable(ctx, storeTable, nil)
			})
			var s Store
			if option == "option3-table" {
				s = must(NewTableStore(must(repo.New[codec.Entity](b.Clients.Tables, storeTable, &repo.Options{Retry: fast})), "LastName", nil))
			} else {
				s = must(NewBlobStore(b.Clients.Blobs, b.Container(false), &BlobStoreOptions{Retry: fast}))
			}
			ix := b.eventual(s, b.queue())
			for range 2 {
				if err := ix.CreateIfNotExists(b.Ctx); err != nil {
					t.Fatal(err)
				}
			}
			if ok, err := b.emps.Exists(b.Ctx); err != nil || !ok {
				t.Fatalf("primary table exists: %v, %v", ok, err)
			}
			e := &Employee{Department: "Sales", EmployeeID: "000123", LastName: "Jones"}
			if err := ix.Insert(b.Ctx, e); err != nil {
				t.Fatalf("insert after CreateIfNotExists: %v", err)
			}
			if err := s.Add(b.Ctx, "Jones", k("Sales", "000123")); err != nil {
				t.Fatalf("the store after CreateIfNotExists: %v", err)
			}
			b.checkKeys(s, "Jones", k("Sales", "000123"))
		})
	}
}
