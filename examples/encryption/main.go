// Command encryption shows client-side encryption of table data (the Azure Table storage design guide, "encrypt table
// data") on the guide's employee data, on an embedded, in-memory Azurite: the SSN, salary
// and email of each employee are encrypted before they leave the program, the email stays
// findable through a blind index used as the key of an intra-partition secondary index
// copy (the Azure Table storage design guide, "intra-partition secondary index pattern"), a merge is refused, a
// tampered entity is detected without loss, and the key-encryption key is rotated in two
// runs, the first stopped midway.
//
//	go run ./examples/encryption            # on an embedded Azurite
//	go run ./examples/encryption -use-env   # on the account of AZURE_STORAGE_CONNECTION_STRING
package main

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/codec/keys"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/repo/account"
	"github.com/tablepatterns/tablepatterns/repo/filter"
	"github.com/tablepatterns/tablepatterns/tabletest"
)

func main() { tabletest.Main("encryption", run) }

// start runs the example on an embedded Azurite, or with useEnv on the account of
// AZURE_STORAGE_CONNECTION_STRING (its table has a unique name and is deleted at the end).
// Employee is the guide's employee entity with its sensitive properties encrypted. The
// department is the PartitionKey; each employee is stored twice in its partition, under
// "empid_<id>" and under "email_<blind index of the email>" (the intra-partition secondary
// index pattern). Each copy is encrypted on its own, bound to its own keys.
type Employee struct {
	Department string `table:",pk"`
	RowKey     string `table:",rk"`
	EmployeeID string `table:"EmployeeId"`
	FirstName  string `table:"FirstName"`
	LastName   string `table:"LastName"`
	Email      string `table:"Email,encrypt"`
	SSN        string `table:"SSN,encrypt"`
	Salary     int64  `table:"Salary,encrypt"`
	ETag       string `table:",etag"`
}

var staff = []struct {
	id                 int64
	first, last, email string
	ssn                string
	salary             int64
}{
	{123, "Don", "Hall", "donh@contoso.com", "078-05-1120", 72_000},
	{152, "Jun", "Cao", "junc@contoso.com", "219-09-9999", 81_500},
	{155, "Ken", "Kwok", "kenk@contoso.com", "457-55-5462", 64_000},
	{223, "Jun", "Jones", "jonesj@contoso.com", "323-45-6789", 93_250},
	{224, "Amy", "Adams", "amya@contoso.com", "514-14-8905", 88_000},
}

// newKey stands for a key fetched from a secret store or a key vault: never from source
// code, never logged.
func newKey(id string) (*codec.LocalKey, error) {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return codec.NewLocalKey(id, b)
}

func run(ctx context.Context, out io.Writer, connStr string) error {
	clients, err := account.NewClients(connStr, nil)
	if err != nil {
		return err
	}
	table := fmt.Sprintf("EmployeesSecret%d", time.Now().UnixNano()%1e12)
	kek2023, err := newKey("kek-2023")
	if err != nil {
		return err
	}
	indexKey := make([]byte, 32)
	_, _ = rand.Read(indexKey)
	emailIndex, err := codec.NewBlindIndex("Email", indexKey, nil)
	if err != nil {
		return err
	}

	enc := &codec.Encryption{Key: kek2023}
	emps, err := repo.New[Employee](clients.Tables, table, &repo.Options{Encryption: enc})
	if err != nil {
		return err
	}
	if err := emps.CreateIfNotExists(ctx); err != nil {
		return err
	}
	raw, err := repo.New[codec.Entity](clients.Tables, table, nil) // what the storage account holds
	if err != nil {
		return err
	}
	defer raw.DeleteTable(context.WithoutCancel(ctx))
	// copies are an employee's two copies: by id, and by the blind index of the email,
	// never the address itself.
	copies := func(e Employee) (byID, byEmail *Employee) {
		a, b := e, e
		a.RowKey = "empid_" + e.EmployeeID
		b.RowKey = "email_" + emailIndex.Sum(e.Email)
		return &a, &b
	}
	for _, s := range staff {
		id, _ := keys.Pad(s.id, 6)
		byID, byEmail := copies(Employee{Department: "Sales", EmployeeID: id, FirstName: s.first, LastName: s.last, Email: s.email, SSN: s.ssn, Salary: s.salary})
		if _, err := repo.Submit(ctx, emps.InsertAction(byID), emps.InsertAction(byEmail)); err != nil {
			return err
		}
	}
	fmt.Fprintf(out, "stored %d employees (two copies each, one transaction each), SSN, Salary and Email encrypted under %s\n", len(staff), kek2023.KeyID())

	// What someone holding only the storage key sees.
	stored, err := raw.Get(ctx, "Sales", "empid_000223")
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "stored Sales/empid_000223: %s\n", describe(&stored))

	// Find by email: the blind index of the address the user typed, one point query.
	jones, err := emps.Get(ctx, "Sales", "email_"+emailIndex.Sum("  JonesJ@Contoso.com"))
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "lookup by email %q -> copy %s...: %s %s, SSN ***-**-%s, salary %d\n",
		"JonesJ@Contoso.com", jones.RowKey[:14], jones.FirstName, jones.LastName, jones.SSN[len(jones.SSN)-4:], jones.Salary)

	// A merge is refused before anything is sent; whole writes of both copies, in one
	// transaction conditional on both ETags, work.
	jones.Salary = 95_000
	err = emps.Update(ctx, &jones, &repo.UpdateOptions{Mode: repo.Merge, Properties: []string{"Salary"}})
	fmt.Fprintf(out, "merge of the salary alone: refused (%t): %s\n", errors.Is(err, repo.ErrInvalidInput), firstClause(err))
	primary, err := emps.Get(ctx, "Sales", "empid_000223")
	if err != nil {
		return err
	}
	primary.Salary, jones.Salary = 95_000, 95_000
	if _, err := repo.Submit(ctx, emps.UpdateAction(&primary, nil), emps.UpdateAction(&jones, nil)); err != nil {
		return err
	}
	fmt.Fprintln(out, "whole update of Jun Jones (both copies, one transaction): salary now 95000")

	// Someone with the storage key copies Don's encrypted salary onto Ken's entity.
	don, err := raw.Get(ctx, "Sales", "empid_000123")
	if err != nil {
		return err
	}
	ken, err := raw.Get(ctx, "Sales", "empid_000155")
	if err != nil {
		return err
	}
	backup := ken
	backup.Properties = copyMap(ken.Properties)
	ken.Properties["Salary"] = don.Properties["Salary"]
	if err := raw.Upsert(ctx, &ken, nil); err != nil {
		return err
	}
	_, err = emps.Get(ctx, "Sales", "empid_000155")
	fmt.Fprintf(out, "read after a ciphertext was moved between entities: tampered (%t), nothing decrypted\n", errors.Is(err, codec.ErrTampered))
	if err := raw.Upsert(ctx, &backup, nil); err != nil {
		return err
	}
	if k, err := emps.Get(ctx, "Sales", "empid_000155"); err != nil || k.Salary != 64_000 {
		return fmt.Errorf("restored entity: %+v, %v", k, err)
	}
	fmt.Fprintln(out, "restored from the backup copy: Ken reads again (salary 64000)")

	// Rotation: writers move to kek-2024 first, then RotateKeys re-wraps every entity's
	// content key; it is stopped after one page and resumed from its token.
	kek2024, err := newKey("kek-2024")
	if err != nil {
		return err
	}
	ring, err := codec.NewKeyring(kek2023, kek2024)
	if err != nil {
		return err
	}
	rotating, err := repo.New[codec.Entity](clients.Tables, table, &repo.Options{Encryption: &codec.Encryption{Key: kek2024, Resolver: ring}})
	if err != nil {
		return err
	}
	first, err := rotating.RotateKeys(ctx, &repo.RotateOptions{PageSize: 6, Pages: 1})
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "rotation run 1 (stopped after one page of 6): rewrapped %d, resume token saved: %t; keys now %s\n",
		first.Rewrapped, first.Token != "", keyIDs(ctx, raw))
	both, err := repo.New[Employee](clients.Tables, table, &repo.Options{Encryption: &codec.Encryption{Key: kek2024, Resolver: ring}})
	if err != nil {
		return err
	}
	mid, err := both.Collect(ctx, repo.Query{Filter: filter.RowKeyPrefix("Sales", "empid_")})
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "midway, with both keys: all %d employees read\n", len(mid))
	second, err := rotating.RotateKeys(ctx, &repo.RotateOptions{PageSize: 6, Token: first.Token})
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "rotation run 2 (resumed): rewrapped %d, done: %t; keys now %s\n", second.Rewrapped, second.Token == "", keyIDs(ctx, raw))
	onlyNew, err := repo.New[Employee](clients.Tables, table, &repo.Options{Encryption: &codec.Encryption{Key: kek2024}})
	if err != nil {
		return err
	}
	after, err := onlyNew.Collect(ctx, repo.Query{Filter: filter.RowKeyPrefix("Sales", "empid_")})
	if err != nil {
		return err
	}
	total := int64(0)
	for _, e := range after {
		total += e.Salary
	}
	fmt.Fprintf(out, "kek-2023 retired: %d employees read with kek-2024 alone, payroll %d\n", len(after), total)
	fmt.Fprintln(out, "encryption example finished")
	return nil
}

// describe lists a stored entity's properties with their stored types, showing plaintext
// values only for strings that are stored as strings.
func describe(e *codec.Entity) string {
	names := make([]string, 0, len(e.Properties))
	for n := range e.Properties {
		names = append(names, n)
	}
	sort.Strings(names)
	var parts []string
	for _, n := range names {
		switch v := e.Properties[n].(type) {
		case []byte:
			parts = append(parts, fmt.Sprintf("%s=<%d bytes binary>", n, len(v)))
		default:
			parts = append(parts, fmt.Sprintf("%s=%v", n, v))
		}
	}
	return strings.Join(parts, " ")
}

// keyIDs counts the entities by the key their content key is wrapped under.
func keyIDs(ctx context.Context, raw *repo.Table[codec.Entity]) string {
	counts := map[string]int{}
	for e, err := range raw.Query(ctx, repo.Query{}) {
		if err != nil {
			return err.Error()
		}
		id, _ := e.EncryptionKeyID()
		counts[id]++
	}
	return fmt.Sprintf("kek-2023: %d, kek-2024: %d", counts["kek-2023"], counts["kek-2024"])
}

func copyMap(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func firstClause(err error) string {
	if err == nil {
		return "no error"
	}
	s := err.Error()
	if i := strings.Index(s, ": its properties"); i > 0 {
		return s[:i]
	}
	return s
}
