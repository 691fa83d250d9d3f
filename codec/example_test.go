package codec_test

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/tablepatterns/tablepatterns/codec"
)

// ExampleFor maps the design guide's employee entity, writes it and reads it back as the
// service returns it.
func ExampleFor() {
	type Employee struct {
		Department string    `table:",pk"`
		EmployeeID string    `table:",rk"`
		ETag       string    `table:",etag"`
		Timestamp  time.Time `table:",timestamp"`
		FirstName  string
		LastName   string
		Age        int32
		Salary     int64
		HireDate   time.Time
	}
	c, err := codec.For[Employee]()
	if err != nil {
		panic(err)
	}
	e := Employee{Department: "Sales", EmployeeID: "000123", FirstName: "Don", LastName: "Hall", Age: 34,
		Salary: 80000, HireDate: time.Date(2019, 3, 14, 9, 0, 0, 0, time.UTC)}
	body, err := c.Encode(&e)
	if err != nil {
		panic(err)
	}
	fmt.Println(string(body))

	// What GetEntity returns: the body plus metadata.
	stored := strings.TrimSuffix(string(body), "}") +
		`,"odata.etag":"W/\"datetime'2024-01-02T03%3A04%3A05Z'\"","Timestamp":"2024-01-02T03:04:05Z"}`
	var got Employee
	if err := c.Decode([]byte(stored), &got); err != nil {
		panic(err)
	}
	fmt.Println(got.FirstName, got.Salary, got.ETag, got.Timestamp.Format(time.RFC3339))
	// Output:
	// {"PartitionKey":"Sales","RowKey":"000123","FirstName":"Don","LastName":"Hall","Age":34,"Salary@odata.type":"Edm.Int64","Salary":"80000","HireDate@odata.type":"Edm.DateTime","HireDate":"2019-03-14T09:00:00.0000000Z"}
	// Don 80000 W/"datetime'2024-01-02T03%3A04%3A05Z'" 2024-01-02T03:04:05Z
}

// ExampleCodec_Encode shows a limit checked before any request is sent.
func ExampleCodec_Encode() {
	type Note struct {
		PartitionKey, RowKey string
		Text                 string
	}
	c, _ := codec.For[Note]()
	_, err := c.Encode(&Note{PartitionKey: "notes", RowKey: "a/b"})
	var ie *codec.InvalidInputError
	fmt.Println(errors.Is(err, codec.ErrInvalidInput), errors.As(err, &ie), ie.Field)
	_, err = c.Encode(&Note{PartitionKey: "notes", RowKey: "1", Text: strings.Repeat("x", 40000)})
	errors.As(err, &ie)
	fmt.Println(ie.Field, ie.Size, ie.Limit)
	// Output:
	// true true RowKey
	// Text 80000 65536
}

// ExampleCodec_Decode decodes what the JavaScript SDK writes: a whole double as a bare
// integer and a DateTime with milliseconds.
func ExampleCodec_Decode() {
	type Reading struct {
		PartitionKey, RowKey string
		Value                float64
		At                   time.Time
	}
	c, _ := codec.For[Reading]()
	var r Reading
	err := c.Decode([]byte(`{"PartitionKey":"sensor1","RowKey":"0001","Value":21,"At@odata.type":"Edm.DateTime","At":"2024-05-06T07:08:09.123Z"}`), &r)
	fmt.Println(r.Value, r.At.Format(time.RFC3339Nano), err)
	// Output: 21 2024-05-06T07:08:09.123Z <nil>
}

// ExampleRegistry decodes one partition holding departments and employees into their own
// types, keyed by an "EntityType" property.
func ExampleRegistry() {
	type Department struct {
		PartitionKey, RowKey string
		DepartmentName       string
		EmployeeCount        int32
	}
	type Employee struct {
		PartitionKey, RowKey string
		FirstName, LastName  string
	}
	r, _ := codec.NewRegistry(codec.RegistryOptions{}) // EntityType property, errors for unknown types
	_ = codec.Register[Department](r, "Department")
	_ = codec.Register[Employee](r, "Employee.v2")
	_ = codec.Register[Employee](r, "Employee") // older entities decode into the same type

	body, _ := r.Encode(&Employee{PartitionKey: "Sales", RowKey: "000123", FirstName: "Don", LastName: "Hall"})
	fmt.Println(string(body))

	page := []string{
		`{"PartitionKey":"Sales","RowKey":"","EntityType":"Department","DepartmentName":"Sales","EmployeeCount":2}`,
		`{"PartitionKey":"Sales","RowKey":"000123","EntityType":"Employee.v2","FirstName":"Don","LastName":"Hall"}`,
		`{"PartitionKey":"Sales","RowKey":"000124","EntityType":"Employee","FirstName":"Ann","LastName":"Lee"}`,
	}
	for _, raw := range page {
		v, err := r.Decode([]byte(raw))
		if err != nil {
			panic(err)
		}
		switch e := v.(type) {
		case *Department:
			fmt.Println("department", e.DepartmentName, e.EmployeeCount)
		case *Employee:
			fmt.Println("employee", e.FirstName, e.LastName)
		}
	}
	// Output:
	// {"PartitionKey":"Sales","RowKey":"000123","FirstName":"Don","LastName":"Hall","EntityType":"Employee.v2"}
	// department Sales 2
	// employee Don Hall
	// employee Ann Lee
}

// ExampleDecodeEntity reads an entity of unknown shape.
func ExampleDecodeEntity() {
	e, _ := codec.DecodeEntity([]byte(`{"PartitionKey":"p","RowKey":"r","Count":3,"Big@odata.type":"Edm.Int64","Big":"9007199254740993","Ratio":0.5}`))
	fmt.Printf("%T %T %T\n", e.Properties["Count"], e.Properties["Big"], e.Properties["Ratio"])
	// Output: int32 int64 float64
}
