package filter_test

import (
	"errors"
	"fmt"
	"time"

	"github.com/tablepatterns/tablepatterns/internal/errs"
	"github.com/tablepatterns/tablepatterns/repo/filter"
)

// The guide's point query: both keys given, at most one entity.
func ExamplePoint() {
	fmt.Println(filter.Point("Sales", "2"))
	// Output: (PartitionKey eq 'Sales') and (RowKey eq '2')
}

// The guide's range query: lo inclusive, hi exclusive.
func ExampleRowKeyRange() {
	fmt.Println(filter.RowKeyRange("Sales", "S", "T"))
	fmt.Println(filter.RowKeyRange("Sales", "00010", ""))
	// Output:
	// (PartitionKey eq 'Sales') and (RowKey ge 'S') and (RowKey lt 'T')
	// (PartitionKey eq 'Sales') and (RowKey ge '00010')
}

// Every employee of Sales whose RowKey starts with "emp_00".
func ExampleRowKeyPrefix() {
	fmt.Println(filter.RowKeyPrefix("Sales", "emp_00"))
	// Output: (PartitionKey eq 'Sales') and (RowKey ge 'emp_00') and (RowKey lt 'emp_01')
}

// The guide's partition scan: one partition, filtered on a non-key property.
func ExampleAnd() {
	name := "Smith"
	fmt.Println(filter.And(filter.PartitionKey("Sales"), filter.Eq("LastName", name)))
	// Output: (PartitionKey eq 'Sales') and (LastName eq 'Smith')
}

// A filter built up from the zero Expr: zero operands are skipped.
func ExampleOr() {
	var f filter.Expr
	for _, name := range []string{"Jones", "Smith"} {
		f = filter.Or(f, filter.Eq("LastName", name))
	}
	fmt.Println(f)
	// Output: (LastName eq 'Jones') or (LastName eq 'Smith')
}

// The Go type of the value selects the EDM literal.
func ExampleEq() {
	type Dept string
	fmt.Println(filter.Eq("Department", Dept("Sales")))
	fmt.Println(filter.Ge("Age", 30))
	fmt.Println(filter.Eq("Ticks", int64(637000000000000000)))
	fmt.Println(filter.Lt("Salary", 50000.0))
	fmt.Println(filter.Gt("Hired", time.Date(2014, 8, 22, 0, 50, 32, 0, time.UTC)))
	fmt.Println(filter.Eq("Photo", []byte{0xca, 0xfe}))
	fmt.Println(filter.Eq("EmployeeID", filter.GUID("C9DA6455-213D-42C9-9A79-3E9149A57833")))
	// Output:
	// Department eq 'Sales'
	// Age ge 30
	// Ticks eq 637000000000000000L
	// Salary lt 50000.0
	// Hired gt datetime'2014-08-22T00:50:32.0000000Z'
	// Photo eq X'cafe'
	// EmployeeID eq guid'c9da6455-213d-42c9-9a79-3e9149a57833'
}

// Hostile values stay one literal; hostile property names are refused.
func ExampleExpr_Err() {
	fmt.Println(filter.Eq("LastName", "x' or PartitionKey ne '"))

	f := filter.And(filter.PartitionKey("Sales"), filter.Eq("Name eq 'x' or true", "y"))
	err := f.Err()
	fmt.Println(errors.Is(err, errs.ErrInvalidInput))
	fmt.Println(err)
	// Output:
	// LastName eq 'x'' or PartitionKey ne '''
	// true
	// tablepatterns: invalid input: property name: "Name eq 'x' or true" is not an identifier (a letter or '_', then letters, digits or '_')
}
