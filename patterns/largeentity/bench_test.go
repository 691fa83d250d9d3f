package largeentity_test

import (
	"context"
	"testing"
	"time"

	"github.com/tablepatterns/tablepatterns/internal/benchcmp"
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

// benchBed builds, on clients whose requests are counted, the Store and the naive table:
// the one place this file builds clients and constructors.
func benchBed(b *testing.B) (context.Context, *benchcmp.Counter, *largeentity.Store[Employee], *repo.Table[InlineEmployee]) {
	b.Helper()
	ctx := context.Background()
	ctr := benchcmp.NewCounter()
	clients, err := account.NewClients(testenv.ConnectionString(b), &account.ClientOptions{Transport: ctr})
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
	return ctx, ctr, store, naive
}

// BenchmarkReadEmployee reads an employee with a 200 KiB photo: the profile alone (lazy,
// one small request) and the profile with the photo (eager, two requests), each against
// the naive entity that carries the photo inline on every read, alternated operation by
// operation in one run (benchcmp). ratio = inline time / Store time.
//
//	go test -run '^$' -bench . -benchtime=100x ./patterns/largeentity/
func BenchmarkReadEmployee(b *testing.B) {
	ctx, ctr, store, naive := benchBed(b)
	pic := photo(1, 200<<10)
	if err := store.Insert(ctx, employee("000123", pic)); err != nil {
		b.Fatal(err)
	}
	if err := naive.Insert(ctx, inline("000124", pic)); err != nil {
		b.Fatal(err)
	}
	inlineRead := benchcmp.Side{Name: "inline", Op: func(int) error {
		e, err := naive.Get(ctx, "Sales", "000124")
		if err != nil {
			return err
		}
		return benchcmp.Check("photo bytes", len(e.Photo0)+len(e.Photo1)+len(e.Photo2)+len(e.Photo3), len(pic))
	}}
	b.Run("get=lazy", func(b *testing.B) {
		benchcmp.Run(b, &benchcmp.Options{GC: true, Requests: ctr.Count},
			benchcmp.Side{Name: "lazy", Op: func(int) error {
				_, err := store.Get(ctx, "Sales", "000123", nil)
				return err
			}}, inlineRead)
	})
	b.Run("get=eager", func(b *testing.B) {
		benchcmp.Run(b, &benchcmp.Options{GC: true, Requests: ctr.Count},
			benchcmp.Side{Name: "eager", Op: func(int) error {
				e, err := store.Get(ctx, "Sales", "000123", &largeentity.GetOptions{Eager: true})
				if err != nil {
					return err
				}
				return benchcmp.Check("photo bytes", len(e.Photo.Bytes()), len(pic))
			}}, inlineRead)
	})
}

// BenchmarkUpdatePhoto replaces a 200 KiB photo: the Store's read, upload, conditional
// write and old-blob delete, against a naive upsert of the inline entity, alternated
// operation by operation in one run (benchcmp).
func BenchmarkUpdatePhoto(b *testing.B) {
	ctx, ctr, store, naive := benchBed(b)
	pics := [][]byte{photo(2, 200<<10), photo(3, 200<<10)}
	if err := store.Insert(ctx, employee("000123", pics[0])); err != nil {
		b.Fatal(err)
	}
	benchcmp.Run(b, &benchcmp.Options{GC: true, Requests: ctr.Count},
		benchcmp.Side{Name: "largeentity", Op: func(i int) error {
			return store.Upsert(ctx, employee("000123", pics[i%2]))
		}},
		benchcmp.Side{Name: "inline", Op: func(i int) error {
			return naive.Upsert(ctx, inline("000124", pics[i%2]), nil)
		}})
}
