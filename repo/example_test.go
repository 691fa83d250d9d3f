package repo_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/tablepatterns/tablepatterns/internal/testenv"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/repo/account"
	"github.com/tablepatterns/tablepatterns/repo/filter"
)

var exampleTables atomic.Int64

// exampleTable returns a fresh table of the test account and a function that deletes it.
// A program would call account.NewClients(os.Getenv("AZURE_STORAGE_CONNECTION_STRING"), nil).
func exampleTable[T any]() (*repo.Table[T], func()) {
	clients, err := account.NewClients(testenv.ExampleConnectionString(), nil)
	if err != nil {
		panic(err)
	}
	name := fmt.Sprintf("Example%d", exampleTables.Add(1))
	t, err := repo.New[T](clients.Tables, name, nil)
	if err != nil {
		panic(err)
	}
	if err := t.CreateIfNotExists(context.Background()); err != nil {
		panic(err)
	}
	return t, func() { _ = t.DeleteTable(context.Background()) }
}

func ExampleNew() {
	type Employee struct {
		Department string `table:",pk"`
		EmployeeID string `table:",rk"`
		LastName   string `table:"LastName"`
		Age        int32  `table:"Age"`
		ETag       string `table:",etag"`
	}
	ctx := context.Background()
	emps, done := exampleTable[Employee]()
	defer done()

	if err := emps.Insert(ctx, &Employee{Department: "Sales", EmployeeID: "000123", LastName: "Hall", Age: 34}); err != nil {
		panic(err)
	}
	e, err := emps.Get(ctx, "Sales", "000123")
	if err != nil {
		panic(err)
	}
	fmt.Println(e.LastName, e.Age)

	// Optimistic concurrency: the update is conditional on the ETag that Get returned.
	stale := e
	e.Age++
	fmt.Println(emps.Update(ctx, &e, nil))
	err = emps.Update(ctx, &stale, nil)
	fmt.Println(errors.Is(err, repo.ErrPreconditionFailed))
	// Output:
	// Hall 34
	// <nil>
	// true
}

func ExampleSubmit() {
	type Department struct {
		Name          string `table:",pk"`
		ID            string `table:",rk"`
		EmployeeCount int32  `table:"EmployeeCount"`
	}
	type Employee struct {
		Department string `table:",pk"`
		EmployeeID string `table:",rk"`
		LastName   string `table:"LastName"`
	}
	ctx := context.Background()
	emps, done := exampleTable[Employee]()
	defer done()
	depts, err := repo.OfType[Department](emps) // the same table, another entity type
	if err != nil {
		panic(err)
	}

	// A department and its first employees change together, or not at all.
	_, err = repo.Submit(ctx,
		depts.InsertAction(&Department{Name: "Sales", ID: "DEPARTMENT", EmployeeCount: 2}),
		emps.InsertAction(&Employee{Department: "Sales", EmployeeID: "000123", LastName: "Hall"}),
		emps.InsertAction(&Employee{Department: "Sales", EmployeeID: "000152", LastName: "Cao"}),
	)
	fmt.Println(err)

	// The second transaction fails on its second action: nothing of it is applied.
	_, err = repo.Submit(ctx,
		emps.InsertAction(&Employee{Department: "Sales", EmployeeID: "000155", LastName: "Kwok"}),
		emps.InsertAction(&Employee{Department: "Sales", EmployeeID: "000123", LastName: "Hall"}),
	)
	var ae *repo.ActionError
	if errors.As(err, &ae) {
		fmt.Println(ae.Index, ae.Code, errors.Is(err, repo.ErrAlreadyExists))
	}
	_, err = emps.Get(ctx, "Sales", "000155")
	fmt.Println(errors.Is(err, repo.ErrNotFound))
	// Output:
	// <nil>
	// 1 EntityAlreadyExists true
	// true
}

func ExampleTable_Pages() {
	type Reading struct {
		Device string `table:",pk"`
		Seq    string `table:",rk"`
		Value  float64
	}
	ctx := context.Background()
	readings, done := exampleTable[Reading]()
	defer done()
	var batch []*Reading
	for i := 0; i < 25; i++ {
		batch = append(batch, &Reading{Device: "d1", Seq: fmt.Sprintf("%04d", i), Value: float64(i)})
	}
	if err := readings.BulkWrite(ctx, batch, nil); err != nil {
		panic(err)
	}

	// Read one page, keep its token (in a database, a cookie, a message) ...
	q := repo.Query{Filter: filter.PartitionKey("d1"), PageSize: 10}
	page, err := readings.Pages(q).Next(ctx)
	if err != nil {
		panic(err)
	}
	fmt.Println(len(page.Items), page.Items[0].Seq)

	// ... and resume later, possibly in another process, from the token alone.
	q.Token = page.Token
	rest, err := readings.Collect(ctx, q)
	if err != nil {
		panic(err)
	}
	fmt.Println(len(rest), rest[0].Seq)
	// Output:
	// 10 0000
	// 15 0010
}
