package largeentity_test

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/tablepatterns/tablepatterns/internal/testenv"
	"github.com/tablepatterns/tablepatterns/patterns/largeentity"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/repo/account"
)

func TestInsertGetLoadOpen(t *testing.T) {
	t.Parallel()
	b := setup(t, false, nil)
	pic := photo(1, 200<<10)
	e := employee("000123", pic)
	if err := b.store.Insert(b.ctx, e); err != nil {
		t.Fatal(err)
	}
	if e.ETag == "" || e.Photo.Pending() || e.Photo.Name() == "" || !e.Badge.Inline() {
		t.Fatalf("after Insert: etag %q, photo pending %v name %q, badge inline %v", e.ETag, e.Photo.Pending(), e.Photo.Name(), e.Badge.Inline())
	}
	if got := b.blobs(); len(got) != 1 || got[0] != e.Photo.Name() {
		t.Fatalf("container holds %q, want only the photo %q", got, e.Photo.Name())
	}

	// Lazy: the entity only; the inline part comes with it.
	lazy, err := b.store.Get(b.ctx, "Sales", "000123", nil)
	if err != nil {
		t.Fatal(err)
	}
	if lazy.Photo.Loaded() || lazy.Photo.Size() != int64(len(pic)) || lazy.Photo.SHA256() != e.Photo.SHA256() || lazy.Photo.ContentType() != "image/jpeg" {
		t.Fatalf("lazy photo: loaded %v size %d sha %s type %q", lazy.Photo.Loaded(), lazy.Photo.Size(), lazy.Photo.SHA256(), lazy.Photo.ContentType())
	}
	mustEqual(t, "inline badge", lazy.Badge.Bytes(), []byte("badge 000123"))

	// On demand: Open streams and verifies; Load fills the part.
	rc, err := b.store.Open(b.ctx, lazy.Photo)
	if err != nil {
		t.Fatal(err)
	}
	streamed, err := io.ReadAll(rc)
	rc.Close()
	if err != nil {
		t.Fatal(err)
	}
	mustEqual(t, "streamed photo", streamed, pic)
	if err := b.store.Load(b.ctx, &lazy); err != nil {
		t.Fatal(err)
	}
	mustEqual(t, "loaded photo", lazy.Photo.Bytes(), pic)

	eager, err := b.store.Get(b.ctx, "Sales", "000123", &largeentity.GetOptions{Eager: true})
	if err != nil {
		t.Fatal(err)
	}
	mustEqual(t, "eager photo", eager.Photo.Bytes(), pic)

	// The blob carries the metadata that ties it to its entity.
	props, err := b.raw.NewBlobClient(e.Photo.Name()).GetProperties(b.ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(props.Metadata) < 2 || props.ContentType == nil || *props.ContentType != "image/jpeg" {
		t.Fatalf("blob metadata %v, content type %v", props.Metadata, props.ContentType)
	}

	if err := b.store.Insert(b.ctx, employee("000123", photo(2, 100<<10))); !errors.Is(err, repo.ErrAlreadyExists) {
		t.Fatalf("second insert: %v, want ErrAlreadyExists", err)
	}
	if got := b.blobs(); len(got) != 1 {
		t.Fatalf("a refused insert left its blob: %q", got)
	}
}

// Input that breaks a limit is refused before any request, table or blob.
func TestInvalidInputSendsNothing(t *testing.T) {
	t.Parallel()
	b := setup(t, true, &largeentity.Options{MaxPartBytes: 64 << 10})
	stored := employee("000123", photo(19, 30<<10))
	if err := b.store.Insert(b.ctx, stored); err != nil {
		t.Fatal(err)
	}
	lazy, err := b.store.Get(b.ctx, "Sales", "000123", nil)
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]func() error{
		"part over MaxPartBytes": func() error { return b.store.Insert(b.ctx, employee("1", photo(20, 65<<10))) },
		"bad content type": func() error {
			e := employee("2", photo(21, 100))
			e.Photo = largeentity.NewBlob([]byte("x"), "image/jpeg\r\nX-Evil: 1")
			return b.store.Upsert(b.ctx, e)
		},
		"bad key": func() error { return b.store.Insert(b.ctx, employee("a/b", photo(22, 100))) },
		"entity too large": func() error {
			e := employee("3", photo(23, 100))
			e.Name = strings.Repeat("x", 40000)
			return b.store.Insert(b.ctx, e)
		},
		"reference without content": func() error {
			c := lazy
			c.EmployeeID = "4"
			return b.store.Insert(b.ctx, &c)
		},
		"nil entity":  func() error { return b.store.Update(b.ctx, nil) },
		"sweep keys":  func() error { _, err := b.store.SweepEntity(b.ctx, "", "x"); return err },
		"open zero":   func() error { _, err := b.store.Open(b.ctx, largeentity.Blob{}); return err },
		"open unsent": func() error { _, err := b.store.Open(b.ctx, largeentity.NewBlob(nil, "")); return err },
	}
	tmark, bmark := b.tproxy.Count(), b.bproxy.Count()
	for name, f := range cases {
		if err := f(); !errors.Is(err, repo.ErrInvalidInput) {
			t.Errorf("%s: %v, want ErrInvalidInput", name, err)
		}
	}
	if n, m := b.tproxy.Count()-tmark, b.bproxy.Count()-bmark; n != 0 || m != 0 {
		t.Fatalf("%d table and %d blob requests sent for refused input", n, m)
	}
	// A plain repo.Table cannot store new content either: it would reference no blob.
	if err := b.store.Table().Insert(b.ctx, employee("5", photo(24, 100))); !errors.Is(err, repo.ErrInvalidInput) {
		t.Fatalf("plain table insert of new content: %v", err)
	}
	if n := b.tproxy.Count() - tmark; n != 0 {
		t.Fatalf("%d requests sent by the plain table", n)
	}
	// A loaded part can be copied to a new entity: it gets its own blob.
	if err := b.store.Load(b.ctx, &lazy); err != nil {
		t.Fatal(err)
	}
	lazy.EmployeeID, lazy.ETag = "000124", ""
	if err := b.store.Insert(b.ctx, &lazy); err != nil {
		t.Fatal(err)
	}
	if lazy.Photo.Name() == stored.Photo.Name() {
		t.Fatal("the copy shares the original's blob")
	}
}

func TestNewRefusesBadSetup(t *testing.T) {
	t.Parallel()
	clients, err := account.NewClients(testenv.ConnectionString(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	type NoETag struct {
		PK    string           `table:",pk"`
		RK    string           `table:",rk"`
		Photo largeentity.Blob `table:"Photo"`
	}
	type NoBlob struct {
		PK   string `table:",pk"`
		RK   string `table:",rk"`
		ETag string `table:",etag"`
	}
	type PtrBlob struct {
		PK    string            `table:",pk"`
		RK    string            `table:",rk"`
		ETag  string            `table:",etag"`
		Photo *largeentity.Blob `table:"Photo"`
	}
	emps, _ := repo.New[Employee](clients.Tables, "Employees", nil)
	noETag, _ := repo.New[NoETag](clients.Tables, "Employees", nil)
	noBlob, _ := repo.New[NoBlob](clients.Tables, "Employees", nil)
	ptrBlob, _ := repo.New[PtrBlob](clients.Tables, "Employees", nil)
	checks := map[string]error{
		"container name":   second(largeentity.New(emps, clients.Blobs, "Bad_Name", nil)),
		"grace too short":  second(largeentity.New(emps, clients.Blobs, "photos", &largeentity.Options{MaxWriteTime: 10, SweepGrace: 15})),
		"inline too large": second(largeentity.New(emps, clients.Blobs, "photos", &largeentity.Options{InlineLimit: largeentity.MaxInlineLimit + 1})),
		"prefix":           second(largeentity.New(emps, clients.Blobs, "photos", &largeentity.Options{Prefix: "a/"})),
		"no etag":          second(largeentity.New(noETag, clients.Blobs, "photos", nil)),
		"no blob":          second(largeentity.New(noBlob, clients.Blobs, "photos", nil)),
		"*Blob":            second(largeentity.New(ptrBlob, clients.Blobs, "photos", nil)),
		"nil table":        second(largeentity.New[Employee](nil, clients.Blobs, "photos", nil)),
	}
	for name, err := range checks {
		if !errors.Is(err, repo.ErrInvalidInput) {
			t.Errorf("%s: %v, want ErrInvalidInput", name, err)
		}
	}
	if _, err := largeentity.New(emps, clients.Blobs, "photos", nil); err != nil {
		t.Fatal(err)
	}
}

func second[A any](_ A, err error) error { return err }

func equalStrings(a, b []string) bool {
	return fmt.Sprint(a) == fmt.Sprint(b)
}
