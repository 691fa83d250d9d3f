// Command largeentity runs the large entities pattern (the Azure Table storage design guide) on the guide's example:
// employees whose photos are too large for an entity live in Blob storage, and the
// employee entity keeps a reference to the photo with its size and SHA-256.
//
//	go run ./examples/largeentity
//
// It starts an embedded, in-memory Azurite on loopback. With -use-env it runs against the
// account of AZURE_STORAGE_CONNECTION_STRING instead (it creates a table and a container
// with unique names and deletes them at the end).
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"time"

	"github.com/tablepatterns/tablepatterns/patterns/largeentity"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/repo/account"
	"github.com/tablepatterns/tablepatterns/tabletest"
)

func main() { tabletest.Main("largeentity", run) }

// Employee is the guide's employee entity with its Photo property (the Azure Table storage design guide, "large
// entities pattern"): the photo's content goes to a blob, the entity keeps the reference.
type Employee struct {
	Department string           `table:",pk"`
	EmployeeID string           `table:",rk"`
	FirstName  string           `table:"FirstName"`
	LastName   string           `table:"LastName"`
	Email      string           `table:"Email"`
	Photo      largeentity.Blob `table:"Photo,omitempty"`
	ETag       string           `table:",etag"`
}

var staff = []struct {
	dept, id, first, last, email string
	photoKB                      int
}{
	{"Sales", "000123", "Don", "Hall", "donh@contoso.com", 180},
	{"Sales", "000152", "Jun", "Cao", "junc@contoso.com", 240},
	{"Marketing", "000223", "Jeff", "Phillips", "jeffp@contoso.com", 12}, // small: stays inline
}

// photo returns deterministic stand-in JPEG content of n KiB.
func photo(seed uint64, kib int) []byte {
	r := rand.New(rand.NewPCG(seed, 42))
	b := make([]byte, kib<<10)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	copy(b, []byte{0xFF, 0xD8, 0xFF, 0xE0}) // the JPEG magic number
	return b
}

func run(ctx context.Context, out io.Writer, connStr string) error {
	clients, err := account.NewClients(connStr, nil)
	if err != nil {
		return err
	}
	suffix := time.Now().UnixNano() % 1e9
	table, err := repo.New[Employee](clients.Tables, fmt.Sprintf("EmployeePhotos%d", suffix), nil)
	if err != nil {
		return err
	}
	photos, err := largeentity.New(table, clients.Blobs, fmt.Sprintf("employee-photos-%d", suffix), nil)
	if err != nil {
		return err
	}
	if err := photos.CreateIfNotExists(ctx); err != nil {
		return err
	}
	defer func() {
		ctx := context.WithoutCancel(ctx)
		_ = table.DeleteTable(ctx)
		_, _ = photos.Container().Delete(ctx, nil)
	}()

	// Insert: each photo goes to a blob under a fresh name first, then the entity.
	for i, s := range staff {
		e := &Employee{Department: s.dept, EmployeeID: s.id, FirstName: s.first, LastName: s.last, Email: s.email,
			Photo: largeentity.NewBlob(photo(uint64(i), s.photoKB), "image/jpeg")}
		if err := photos.Insert(ctx, e); err != nil {
			return err
		}
		where := "in blob " + e.Photo.Name()
		if e.Photo.Inline() {
			where = "inline in the entity"
		}
		fmt.Fprintf(out, "stored %s/%s %s %s: photo %d KiB %s\n", s.dept, s.id, s.first, s.last, e.Photo.Size()>>10, where)
	}

	// Lazy read: one request; the entity knows the photo's size and hash without it.
	don, err := photos.Get(ctx, "Sales", "000123", nil)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "lazy read Sales/000123: photo %d bytes, sha256 %s..., loaded %v\n", don.Photo.Size(), don.Photo.SHA256()[:12], don.Photo.Loaded())
	// On demand: one more request, verified against the entity's size and SHA-256.
	if err := photos.Load(ctx, &don); err != nil {
		return err
	}
	fmt.Fprintf(out, "loaded on demand: %d bytes, verified\n", len(don.Photo.Bytes()))

	// A new photo: new blob, then the entity (conditional on its ETag), then the old blob
	// is deleted.
	old := don.Photo.Name()
	don.Photo = largeentity.NewBlob(photo(99, 200), "image/jpeg")
	if err := photos.Update(ctx, &don); err != nil {
		return err
	}
	_, err = photos.Container().NewBlobClient(old).GetProperties(ctx, nil)
	fmt.Fprintf(out, "new photo for Sales/000123 in %s; old blob deleted: %v\n", don.Photo.Name(), err != nil)

	// A stale copy (read before the update) is refused: it would reference a deleted blob.
	stale := don
	stale.ETag = `W/"datetime'2014-07-31T18%3A00%3A00.0000000Z'"`
	stale.FirstName = "Donald"
	if err := photos.Update(ctx, &stale); !errors.Is(err, repo.ErrPreconditionFailed) {
		return fmt.Errorf("a stale update was not refused: %v", err)
	}
	fmt.Fprintln(out, "update from a stale copy: refused (ErrPreconditionFailed)")

	// Eager read: the entity and its photo, verified.
	jun, err := photos.Get(ctx, "Sales", "000152", &largeentity.GetOptions{Eager: true})
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "eager read Sales/000152 %s %s: photo %d KiB in memory\n", jun.FirstName, jun.LastName, len(jun.Photo.Bytes())>>10)

	// Delete: the entity first, then its blobs.
	if err := photos.Delete(ctx, "Marketing", "000223", nil); err != nil {
		return err
	}
	if err := photos.Delete(ctx, "Sales", "000152", nil); err != nil {
		return err
	}
	fmt.Fprintln(out, "deleted Marketing/000223 and Sales/000152 with their photos")

	// The sweeper: blobs younger than the grace period (1 hour) are never judged, since a
	// write may be about to reference them; older ones nobody references are deleted.
	rep, err := photos.Sweep(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "sweep: %d blobs scanned, %d too young to judge, %d orphans deleted\n", rep.Scanned, rep.Young, rep.Deleted)
	fmt.Fprintln(out, "large entities example finished")
	return nil
}
