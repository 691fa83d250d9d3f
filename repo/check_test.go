package repo_test

import (
	"errors"
	"testing"

	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/errs"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/retry"
)

func TestCheckOptions(t *testing.T) {
	if err := repo.CheckOptions[Employee](nil); err != nil {
		t.Fatalf("nil options: %v", err)
	}
	var ie *repo.InvalidInputError
	if err := repo.CheckOptions[Employee](&repo.Options{Concurrency: -2}); !errors.As(err, &ie) || ie.Field != "Options.Concurrency" {
		t.Fatalf("bad concurrency: %v", err)
	}
	type noKeys struct{ A string }
	if err := repo.CheckOptions[noKeys](nil); !errors.Is(err, repo.ErrInvalidInput) {
		t.Fatalf("a type without keys: %v", err)
	}
}

type plainRow struct {
	PK   string `table:",pk"`
	RK   string `table:",rk"`
	Name string `table:"Name"`
}

type secretRow struct {
	PK  string `table:",pk"`
	RK  string `table:",rk"`
	SSN string `table:"SSN,encrypt"`
}

func checkParity[T any](t *testing.T, svc *aztables.ServiceClient, name string, o *repo.Options) {
	t.Helper()
	_, nerr := repo.New[T](svc, name, o)
	cerr := repo.CheckOptions[T](o)
	if (nerr == nil) != (cerr == nil) {
		t.Errorf("%s %+v: New: %v; CheckOptions: %v", name, o, nerr, cerr)
	}
	if nerr != nil && !errors.Is(nerr, errs.ErrInvalidInput) {
		t.Errorf("New: %v is not ErrInvalidInput", nerr)
	}
}

// CheckOptions must refuse exactly what New refuses for a valid table name: periodtable
// validates every period table's options with it once and builds the tables later.
func TestCheckOptionsRefusesExactlyWhatNewRefuses(t *testing.T) {
	t.Parallel()
	svc, err := aztables.NewServiceClientWithNoCredential("http://127.0.0.1:1/devstoreaccount1", nil)
	if err != nil {
		t.Fatal(err)
	}
	kek, err := codec.NewLocalKey("k1", make([]byte, 32))
	if err != nil {
		t.Fatal(err)
	}
	opts := []*repo.Options{
		nil, {},
		{WriteHistory: 1}, {WriteHistory: -1}, {WriteHistory: 257}, {TrackWrites: true, WriteHistory: 1},
		{TrackWrites: true, WriteIDProperty: "Name"}, {TrackWrites: true, WriteIDProperty: "PartitionKey"},
		{TrackWrites: true, WriteIDProperty: "bad-name"}, {WriteIDProperty: "Name"},
		{Concurrency: -1}, {CreateWait: -2 * time.Second}, {Retry: retry.Policy{MaxRetries: -5}},
		{Encryption: &codec.Encryption{}}, {Encryption: &codec.Encryption{Key: kek, Table: "1bad"}},
		{Encryption: &codec.Encryption{Key: kek, Table: "Other"}},
	}
	for _, o := range opts {
		checkParity[plainRow](t, svc, "people", o)
		checkParity[secretRow](t, svc, "people", o)
		checkParity[codec.Entity](t, svc, "people", o)
	}
}

// Encryption.Table binds entities to a table so that one moved to another table fails to
// read there. New accepts a binding to another table than its own: every entity it writes
// is bound to "Other", and reads as genuine once copied to the table Other.
// Expected: New refuses an Encryption.Table that is not its table's name (compared without case).
func TestNewRefusesEncryptionBoundToAnotherTable(t *testing.T) {
	t.Parallel()
	svc, err := aztables.NewServiceClientWithNoCredential("http://127.0.0.1:1/devstoreaccount1", nil)
	if err != nil {
		t.Fatal(err)
	}
	kek, err := codec.NewLocalKey("k1", make([]byte, 32))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := repo.New[secretRow](svc, "people", &repo.Options{Encryption: &codec.Encryption{Key: kek, Table: "Other"}}); err == nil {
		t.Errorf("New of table people accepted Encryption.Table %q", "Other")
	}
}
