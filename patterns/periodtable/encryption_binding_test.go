package periodtable_test

import (
	"errors"
	"testing"
	"time"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/errs"
	"github.com/tablepatterns/tablepatterns/patterns/internal/testbed"
	"github.com/tablepatterns/tablepatterns/patterns/periodtable"
	"github.com/tablepatterns/tablepatterns/repo"
)

// One Encryption serves every period table, and each table binds its entities to its own
// name: an encrypted entity of one day replayed, byte for byte, into the next day's table
// (by anyone who can write the account) fails to read there, instead of passing as a
// genuine sign-in of that day.
func TestEncryptionBoundPerPeriodTable(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	kek, err := codec.NewLocalKey("k1", make([]byte, 32))
	if err != nil {
		t.Fatal(err)
	}
	o := &periodtable.Options{Table: repo.Options{Retry: testbed.FastRetry(), Encryption: &codec.Encryption{Key: kek}}}
	pt, err := periodtable.New[Secret](b.clients.Tables, periodtable.Scheme{Prefix: b.prefix, Period: periodtable.Daily}, "AttemptTime", o)
	if err != nil {
		t.Fatal(err)
	}
	day1, day2 := day0.Add(time.Hour), day0.AddDate(0, 0, 1).Add(time.Hour)
	s := &Secret{UserID: "u", Attempt: "a1", AttemptTime: day1, Note: "password reset"}
	if err := pt.Insert(b.ctx, s); err != nil {
		t.Fatal(err)
	}
	if got, err := pt.Get(b.ctx, day1, "u", "a1"); err != nil || got.Note != s.Note {
		t.Fatalf("Get in its own table: %+v, %v", got, err)
	}
	// Replay the stored entity (ciphertext and metadata as they are) into day 2's table,
	// with its time property moved into day 2.
	t1, _ := pt.Scheme().TableFor(day1)
	t2, err := pt.Prepare(b.ctx, day2)
	if err != nil {
		t.Fatal(err)
	}
	raw1, err := repo.New[codec.Entity](b.clients.Tables, t1.Name, &repo.Options{Retry: testbed.FastRetry()})
	if err != nil {
		t.Fatal(err)
	}
	raw2, err := repo.New[codec.Entity](b.clients.Tables, t2.Name, &repo.Options{Retry: testbed.FastRetry()})
	if err != nil {
		t.Fatal(err)
	}
	stored, err := raw1.Get(b.ctx, "u", "a1")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := stored.Properties["Note"]; !ok || stored.Properties["Note"] == s.Note {
		t.Fatalf("stored Note %v: not encrypted", stored.Properties["Note"])
	}
	stored.ETag = ""
	if err := raw2.Insert(b.ctx, &stored); err != nil {
		t.Fatal(err)
	}
	got, err := pt.Get(b.ctx, day2, "u", "a1")
	if !errors.Is(err, codec.ErrTampered) {
		t.Fatalf("entity of %s replayed into %s reads as %+v, %v; want ErrTampered", t1.Name, t2.Name, got, err)
	}
	var qerr error
	for v, err := range pt.Query(b.ctx, day2.Add(-time.Hour), day2.Add(time.Hour), repo.Query{}, nil) {
		if err == nil {
			t.Fatalf("query over %s yields %+v", t2.Name, v)
		}
		qerr = err
	}
	if !errors.Is(qerr, codec.ErrTampered) {
		t.Fatalf("query over %s: %v; want ErrTampered", t2.Name, qerr)
	}

	// A time property that is encrypted cannot route: refused.
	if _, err := periodtable.New[Secret](b.clients.Tables, pt.Scheme(), "Note", o); !errors.Is(err, errs.ErrInvalidInput) {
		t.Fatalf("New with an encrypted time property: %v", err)
	}
	// An Encryption bound by the caller can name at most one period table: refused.
	o.Table.Encryption = &codec.Encryption{Key: kek, Table: t1.Name}
	if _, err := periodtable.New[Secret](b.clients.Tables, pt.Scheme(), "AttemptTime", o); !errors.Is(err, errs.ErrInvalidInput) {
		t.Fatalf("New with Encryption.Table %q: %v", t1.Name, err)
	}
}
