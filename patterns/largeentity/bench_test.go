package largeentity_test

import (
	"context"
	"testing"
	"time"

	"github.com/tablepatterns/tablepatterns/internal/testenv"
	"github.com/tablepatterns/tablepatterns/patterns/largeentity"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/repo/account"
)

// InlineEmployee is the naive alternative: the photo split over Edm.Binary properties of at
// most 64 KiB inside the entity (possible up to about 1 MiB in all), so that every read of
// the employee carries the photo.
type InlineEmployee struct {
	Department string `table:",pk"`
	EmployeeID string `table:",rk"`
	Name       string `table:"Name"`
	Photo0     []byte `table:"Photo0,omitempty"`
	Photo1     []byte `table:"Photo1,omitempty"`
	Photo2     []byte `table:"Photo2,omitempty"`
	Photo3     []byte `table:"Photo3,omitempty"`
	ETag       string `table:",etag"`
}

func inline(id string, pic []byte) *InlineEmployee {
	e := &InlineEmployee{Department: "Sales", EmployeeID: id, Name: "Don Hall"}
	chunks := []*[]byte{&e.Photo0, &e.Photo1, &e.Photo2, &e.Photo3}
	for i := 0; len(pic) > 0; i++ {
		n := min(len(pic), 60<<10)
		*chunks[i], pic = pic[:n], pic[n:]
	}
	return e
}

func benchBed(b *testing.B) (context.Context, *largeentity.Store[Employee], *repo.Table[InlineEmployee]) {
	b.Helper()
	ctx := context.Background()
	clients, err := account.NewClients(testenv.ConnectionString(b), nil)
	if err != nil {
		b.Fatal(err)
	}
	name := testenv.TableName(b)
	testenv.Table(b, name)
	table, err := repo.New[Employee](clients.Tables, name, nil)
	if err != nil {
		b.Fatal(err)
	}
	store, err := largeentity.New(table, clients.Blobs, testenv.ContainerName(b), nil)
	if err != nil {
		b.Fatal(err)
	}
	if err := store.CreateIfNotExists(ctx); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_, _ = store.Container().Delete(ctx, nil)
	})
	naive, err := repo.New[InlineEmployee](clients.Tables, name, nil)
	if err != nil {
		b.Fatal(err)
	}
	return ctx, store, naive
}

// BenchmarkReadEmployee reads an employee with a 200 KiB photo: the profile alone (lazy,
// one small request), the profile with the photo (eager, two requests), and the naive
// entity that carries the photo inline on every read.
func BenchmarkReadEmployee(b *testing.B) {
	ctx, store, naive := benchBed(b)
	pic := photo(1, 200<<10)
	if err := store.Insert(ctx, employee("000123", pic)); err != nil {
		b.Fatal(err)
	}
	if err := naive.Insert(ctx, inline("000124", pic)); err != nil {
		b.Fatal(err)
	}
	b.Run("impl=largeentity-lazy", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := store.Get(ctx, "Sales", "000123", nil); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("impl=largeentity-eager", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			e, err := store.Get(ctx, "Sales", "000123", &largeentity.GetOptions{Eager: true})
			if err != nil || len(e.Photo.Bytes()) != len(pic) {
				b.Fatal(err)
			}
		}
	})
	b.Run("impl=naive-inline", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := naive.Get(ctx, "Sales", "000124"); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkUpdatePhoto replaces a 200 KiB photo: the Store's read, upload, conditional
// write and old-blob delete, against a naive upsert of the inline entity.
func BenchmarkUpdatePhoto(b *testing.B) {
	ctx, store, naive := benchBed(b)
	pics := [][]byte{photo(2, 200<<10), photo(3, 200<<10)}
	if err := store.Insert(ctx, employee("000123", pics[0])); err != nil {
		b.Fatal(err)
	}
	b.Run("impl=largeentity", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			i++
			if err := store.Upsert(ctx, employee("000123", pics[i%2])); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("impl=naive-inline", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			i++
			if err := naive.Upsert(ctx, inline("000124", pics[i%2]), nil); err != nil {
				b.Fatal(err)
			}
		}
	})
}
