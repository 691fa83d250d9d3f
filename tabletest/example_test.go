package tabletest_test

import (
	"context"
	"fmt"

	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/repo/account"
)

// Employee is the guide's employee entity.
type Employee struct {
	PartitionKey string // department
	RowKey       string // employee id
	FirstName    string
}

// A test of your own code against Azurite: start it (here through the package's Env, which
// TestMain stops), build clients from its connection string, and use tables as in
// production.
func Example() {
	ctx := context.Background()
	s, err := shared.Start(ctx) // in a test: shared.Server(t)
	if err != nil {
		fmt.Println(err) // says how to install Azurite
		return
	}
	clients, err := account.NewClients(s.ConnectionString(), nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	employees, err := repo.New[Employee](clients.Tables, "ExampleEmployees", nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := employees.CreateIfNotExists(ctx); err != nil {
		fmt.Println(err)
		return
	}
	if err := employees.Insert(ctx, &Employee{PartitionKey: "Sales", RowKey: "000123", FirstName: "Ann"}); err != nil {
		fmt.Println(err)
		return
	}
	e, err := employees.Get(ctx, "Sales", "000123")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(e.FirstName, "works in", e.PartitionKey)
	// Output: Ann works in Sales
}
