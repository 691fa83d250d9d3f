package largeentity_test

import (
	"context"
	"testing"

	"github.com/tablepatterns/tablepatterns/internal/testenv"
	"github.com/tablepatterns/tablepatterns/patterns/largeentity"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/repo/account"
	"github.com/tablepatterns/tablepatterns/tabletest"
)

// The large-entity pattern (a table and a blob container) with Microsoft Entra ID tokens
// over HTTPS and no account key: write, read back, replace, delete.
func TestLargeEntitiesWithTokenAuth(t *testing.T) {
	t.Parallel()
	s := testenv.OAuthServer(t)
	cred := &tabletest.Credential{}
	clients, err := account.NewTokenClients(account.Endpoints{Table: s.TableURL, Blob: s.BlobURL}, cred,
		&repo.ClientOptions{Transport: s.HTTPClient()})
	if err != nil {
		t.Fatal(err)
	}
	table, err := repo.New[Employee](clients.Tables, testenv.TableName(t), &repo.Options{Retry: fast})
	if err != nil {
		t.Fatal(err)
	}
	store, err := largeentity.New(table, clients.Blobs, testenv.ContainerName(t), &largeentity.Options{Retry: fast})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	if err := table.CreateIfNotExists(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = table.DeleteTable(context.Background()) })
	if err := store.CreateIfNotExists(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = store.Container().Delete(context.Background(), nil) })

	big := photo(1, 300<<10)
	e := employee("000001", big)
	if err := store.Insert(ctx, e); err != nil {
		t.Fatal(err)
	}
	got, err := store.Get(ctx, e.Department, e.EmployeeID, &largeentity.GetOptions{Eager: true})
	if err != nil {
		t.Fatal(err)
	}
	mustEqual(t, "photo read with a token", got.Photo.Bytes(), big)
	got.Photo = largeentity.NewBlob(photo(2, 200<<10), "image/jpeg")
	if err := store.Update(ctx, &got); err != nil {
		t.Fatal(err)
	}
	if err := store.Delete(ctx, got.Department, got.EmployeeID, nil); err != nil {
		t.Fatal(err)
	}
	if cred.Issued() == 0 {
		t.Fatal("no token issued")
	}
}
