package codec_test

import (
	"errors"
	"testing"

	"github.com/tablepatterns/tablepatterns/codec"
)

type Department struct {
	PartitionKey, RowKey string
	ETag                 string
	DepartmentName       string
	EmployeeCount        int32
}

type Employee struct {
	PartitionKey, RowKey string
	ETag                 string
	FirstName, LastName  string
	Age                  int32
	Email                string
}

func TestRegistryByProperty(t *testing.T) {
	t.Parallel()
	r, err := codec.NewRegistry(codec.RegistryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := codec.Register[Department](r, "Department"); err != nil {
		t.Fatal(err)
	}
	if err := codec.Register[Employee](r, "Employee.v2"); err != nil {
		t.Fatal(err)
	}
	if err := codec.Register[Employee](r, "Employee"); err != nil { // older version: alias
		t.Fatal(err)
	}
	assertInvalid(t, codec.Register[Department](r, "Employee"), "", 0, 0)
	assertInvalid(t, codec.Register[Department](r, ""), "", 0, 0)

	emp := &Employee{PartitionKey: "Sales", RowKey: "000123", FirstName: "Don", Age: 34}
	data, err := r.Encode(emp)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"PartitionKey":"Sales","RowKey":"000123","FirstName":"Don","LastName":"","Age":34,"Email":"","EntityType":"Employee.v2"}`; string(data) != want {
		t.Errorf("Encode = %s", data)
	}
	if name, ok := r.TypeName(emp); !ok || name != "Employee.v2" {
		t.Errorf("TypeName = %q, %v", name, ok)
	}
	got, err := r.Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	if e, ok := got.(*Employee); !ok || *e != *emp {
		t.Errorf("Decode = %#v", got)
	}
	// One partition, several kinds, one of them written under an old version name.
	page := []string{
		`{"odata.etag":"W/\"1\"","PartitionKey":"Sales","RowKey":"DEPARTMENT","EntityType":"Department","DepartmentName":"Sales","EmployeeCount":2}`,
		`{"PartitionKey":"Sales","RowKey":"000124","EntityType":"Employee","FirstName":"Ann"}`,
	}
	d, err := r.Decode([]byte(page[0]))
	if dep, ok := d.(*Department); err != nil || !ok || dep.EmployeeCount != 2 || dep.ETag != `W/"1"` {
		t.Errorf("Decode department = %#v, %v", d, err)
	}
	e, err := r.Decode([]byte(page[1]))
	if emp, ok := e.(*Employee); err != nil || !ok || emp.FirstName != "Ann" {
		t.Errorf("Decode old employee = %#v, %v", e, err)
	}
	// Unknown and missing discriminators.
	_, err = r.Decode([]byte(`{"PartitionKey":"Sales","RowKey":"x","EntityType":"Manager"}`))
	var ue *codec.UnknownEntityTypeError
	if !errors.Is(err, codec.ErrUnknownEntityType) || !errors.As(err, &ue) || ue.Name != "Manager" || ue.RowKey != "x" {
		t.Errorf("unknown: %v", err)
	}
	if _, err = r.Decode([]byte(`{"PartitionKey":"Sales","RowKey":"x"}`)); !errors.Is(err, codec.ErrUnknownEntityType) {
		t.Errorf("missing: %v", err)
	}
	// Unregistered Go type.
	_, err = r.Encode(&fixtureEmployee{})
	assertInvalid(t, err, "", 0, 0)
	// A type with its own EntityType field is refused: the registry owns that property.
	type selfTyped struct {
		PartitionKey, RowKey string
		EntityType           string
	}
	assertInvalid(t, codec.Register[selfTyped](r, "Self"), "EntityType", 0, 0)
}

func TestRegistryUnknownAsEntity(t *testing.T) {
	t.Parallel()
	r, err := codec.NewRegistry(codec.RegistryOptions{Property: "Kind", UnknownAsEntity: true})
	if err != nil {
		t.Fatal(err)
	}
	v, err := r.Decode([]byte(`{"PartitionKey":"p","RowKey":"r","Kind":"Other","N":1}`))
	if err != nil {
		t.Fatal(err)
	}
	e, ok := v.(*codec.Entity)
	if !ok || e.Properties["Kind"] != "Other" || e.Properties["N"] != int32(1) {
		t.Errorf("got %#v", v)
	}
}

func TestRegistryByRowKeyPrefix(t *testing.T) {
	t.Parallel()
	r, err := codec.NewRegistry(codec.RegistryOptions{Discriminator: codec.ByRowKeyPrefix})
	if err != nil {
		t.Fatal(err)
	}
	if err := codec.Register[Employee](r, "EMPLOYEE"); err != nil {
		t.Fatal(err)
	}
	if err := codec.Register[Department](r, "DEPARTMENT"); err != nil {
		t.Fatal(err)
	}
	assertInvalid(t, codec.Register[fixtureEmployee](r, "A_B"), "", 0, 0)
	assertInvalid(t, codec.Register[fixtureEmployee](r, "A/B"), "RowKey", 0, 0)

	data, err := r.Encode(Employee{PartitionKey: "Sales", RowKey: "EMPLOYEE_000123", FirstName: "Don"})
	if err != nil {
		t.Fatal(err)
	}
	v, err := r.Decode(data)
	if e, ok := v.(*Employee); err != nil || !ok || e.FirstName != "Don" {
		t.Errorf("Decode = %#v, %v", v, err)
	}
	v, err = r.Decode([]byte(`{"PartitionKey":"Sales","RowKey":"DEPARTMENT_SALES","DepartmentName":"Sales"}`))
	if d, ok := v.(*Department); err != nil || !ok || d.DepartmentName != "Sales" {
		t.Errorf("Decode = %#v, %v", v, err)
	}
	_, err = r.Encode(&Employee{PartitionKey: "Sales", RowKey: "000123"})
	assertInvalid(t, err, "RowKey", 0, 0)
	if _, err := r.Decode([]byte(`{"PartitionKey":"Sales","RowKey":"MANAGER_1"}`)); !errors.Is(err, codec.ErrUnknownEntityType) {
		t.Errorf("unknown prefix: %v", err)
	}
}

func TestRegistryOptionsValidated(t *testing.T) {
	t.Parallel()
	for _, o := range []codec.RegistryOptions{
		{Property: "Entity-Type"},
		{Property: "RowKey"},
		{Discriminator: codec.ByRowKeyPrefix, Separator: "/"},
		{Discriminator: 9},
	} {
		if _, err := codec.NewRegistry(o); !errors.Is(err, codec.ErrInvalidInput) {
			t.Errorf("NewRegistry(%+v) err = %v", o, err)
		}
	}
}
