package codec_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/internal/benchcmp"
)

// benchEmployee is the design guide's employee entity.
type benchEmployee struct {
	Department string `table:",pk"`
	EmployeeNo string `table:",rk"`
	ETag       string `table:",etag"`
	Timestamp  time.Time
	FirstName  string
	LastName   string
	Age        int32
	Email      string
	HireDate   time.Time
	EmployeeID int64
	Badge      codec.GUID
}

func newBenchEmployee() benchEmployee {
	return benchEmployee{
		Department: "Sales", EmployeeNo: "000123", FirstName: "Don", LastName: "Hall", Age: 34,
		Email: "donh@contoso.com", HireDate: time.Date(2019, 3, 14, 9, 0, 0, 0, time.UTC),
		EmployeeID: 1234567890123, Badge: codec.GUID{0x6f, 0x1c, 0x2a, 0x0e, 0x55, 0x3b, 0x4d, 0x1a, 0x9c, 0x1e, 0x7b, 0x2d, 0x11, 0x22, 0x33, 0x44},
	}
}

// BenchmarkEmployeeRoundTrip encodes and decodes the employee entity through Codec[T]
// ("codec") and the way one writes it with aztables ("aztables": EDMEntity, json.Marshal,
// json.Unmarshal), alternated in batches of 64 in one run (benchcmp), and reports how many
// times faster codec is (ratio) and its share of the allocations (alloc-ratio).
func BenchmarkEmployeeRoundTrip(b *testing.B) {
	emp := newBenchEmployee()
	c, err := codec.For[benchEmployee]()
	if err != nil {
		b.Fatal(err)
	}
	buf := make([]byte, 0, 512)
	var out benchEmployee
	benchcmp.Run(b, &benchcmp.Options{Batch: 64, Allocs: true},
		benchcmp.Side{Name: "codec", Op: func(int) error {
			data, err := c.AppendEncode(buf[:0], &emp)
			if err != nil {
				return err
			}
			buf = data
			return c.Decode(data, &out)
		}},
		benchcmp.Side{Name: "aztables", Op: func(int) error {
			ent := aztables.EDMEntity{
				Entity: aztables.Entity{PartitionKey: emp.Department, RowKey: emp.EmployeeNo},
				Properties: map[string]any{
					"FirstName":  emp.FirstName,
					"LastName":   emp.LastName,
					"Age":        emp.Age,
					"Email":      emp.Email,
					"HireDate":   aztables.EDMDateTime(emp.HireDate),
					"EmployeeID": aztables.EDMInt64(emp.EmployeeID),
					"Badge":      aztables.EDMGUID(emp.Badge.String()),
				},
			}
			data, err := json.Marshal(ent)
			if err != nil {
				return err
			}
			var back aztables.EDMEntity
			return json.Unmarshal(data, &back)
		}})
}

// BenchmarkEmployeeEncode and BenchmarkEmployeeDecode split the round trip.
func BenchmarkEmployeeEncode(b *testing.B) {
	emp := newBenchEmployee()
	c, _ := codec.For[benchEmployee]()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Encode(&emp); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEmployeeDecode(b *testing.B) {
	emp := newBenchEmployee()
	c, _ := codec.For[benchEmployee]()
	data, _ := c.Encode(&emp)
	data = append(data[:len(data)-1], `,"odata.metadata":"https://x.table.core.windows.net/$metadata#Employees/@Element","odata.etag":"W/\"datetime'2024-01-02T03%3A04%3A05.1234567Z'\"","Timestamp@odata.type":"Edm.DateTime","Timestamp":"2024-01-02T03:04:05.1234567Z"}`...)
	var out benchEmployee
	b.ReportAllocs()
	for b.Loop() {
		if err := c.Decode(data, &out); err != nil {
			b.Fatal(err)
		}
	}
}
