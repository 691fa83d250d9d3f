package repo_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/tablepatterns/tablepatterns/repo"
)

func TestGetFunc(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	tb := table[Employee](t, b, nil)
	e := employee("Sales", "000123")
	if err := tb.Insert(b.ctx, e); err != nil {
		t.Fatal(err)
	}
	type raw struct {
		First string `json:"FirstName"`
		ETag  string
	}
	decode := func(data []byte, etag string) (raw, error) {
		var r raw
		err := json.Unmarshal(data, &r)
		r.ETag = etag
		return r, err
	}
	got, err := repo.GetFunc(b.ctx, tb, "Sales", "000123", decode)
	if err != nil || got.First != e.FirstName || got.ETag != e.ETag {
		t.Fatalf("GetFunc = %+v, %v; want %q with ETag %q", got, err, e.FirstName, e.ETag)
	}
	if _, err := repo.GetFunc(b.ctx, tb, "Sales", "missing", decode); !errors.Is(err, repo.ErrNotFound) {
		t.Fatalf("missing entity: %v, want ErrNotFound", err)
	}
	boom := errors.New("boom")
	if _, err := repo.GetFunc(b.ctx, tb, "Sales", "000123", func([]byte, string) (raw, error) { return raw{}, boom }); !errors.Is(err, boom) {
		t.Fatalf("decode error: %v", err)
	}
	mark := b.proxy.Count()
	if _, err := repo.GetFunc(b.ctx, tb, "", "x", decode); !errors.Is(err, repo.ErrInvalidInput) {
		t.Fatalf("empty PartitionKey: %v", err)
	}
	if _, err := repo.GetFunc(b.ctx, tb, "a/b", "x", decode); !errors.Is(err, repo.ErrInvalidInput) {
		t.Fatalf("bad PartitionKey: %v", err)
	}
	if n := b.proxy.Count() - mark; n != 0 {
		t.Fatalf("%d requests sent for refused keys", n)
	}
}
