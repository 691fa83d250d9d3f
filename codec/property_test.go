package codec_test

import (
	"testing"
	"time"

	"github.com/tablepatterns/tablepatterns/codec"
)

type propertyProbe struct {
	Dept    string            `table:",pk"`
	ID      string            `table:",rk"`
	Name    string            `table:"FullName"`
	Age     int32             `table:"Age"`
	Salary  int               `table:"Salary"`
	Score   float64           `table:"Score"`
	Hired   time.Time         `table:"Hired"`
	Photo   []byte            `table:"Photo"`
	Key     codec.GUID        `table:"Key"`
	Active  bool              `table:"Active"`
	Tags    []string          `table:"Tags,json"`
	Secret  string            `table:"Secret,encrypt"`
	Created time.Time         `table:",timestamp"`
	Rest    map[string]any    `table:",extra"`
	private map[string]string //nolint:unused // not mapped
}

func TestPropertyDescribesTheSchema(t *testing.T) {
	c, err := codec.For[propertyProbe]()
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]codec.PropertyInfo{
		"FullName":     {Name: "FullName", GoName: "Name", Type: "Edm.String"},
		"Age":          {Name: "Age", GoName: "Age", Type: "Edm.Int32"},
		"Salary":       {Name: "Salary", GoName: "Salary", Type: "Edm.Int64"},
		"Score":        {Name: "Score", GoName: "Score", Type: "Edm.Double"},
		"Hired":        {Name: "Hired", GoName: "Hired", Type: "Edm.DateTime"},
		"Photo":        {Name: "Photo", GoName: "Photo", Type: "Edm.Binary"},
		"Key":          {Name: "Key", GoName: "Key", Type: "Edm.Guid"},
		"Active":       {Name: "Active", GoName: "Active", Type: "Edm.Boolean"},
		"Tags":         {Name: "Tags", GoName: "Tags", Type: "Edm.String"},
		"Secret":       {Name: "Secret", GoName: "Secret", Type: "Edm.String", Encrypted: true},
		"PartitionKey": {Name: "PartitionKey", GoName: "Dept", Type: "Edm.String"},
		"RowKey":       {Name: "RowKey", GoName: "ID", Type: "Edm.String"},
		"Timestamp":    {Name: "Timestamp", GoName: "Created", Type: "Edm.DateTime"},
	} {
		got, ok := c.Property(name)
		if !ok || got != want {
			t.Errorf("Property(%q) = %+v, %v; want %+v", name, got, ok, want)
		}
	}
	for _, name := range []string{"Name", "Rest", "private", "Nope"} {
		if _, ok := c.Property(name); ok {
			t.Errorf("Property(%q) found", name)
		}
	}
	if !c.OpenSchema() {
		t.Error("a type with an extra field is not open")
	}
	if got := len(c.Properties()); got != 10 {
		t.Errorf("%d properties: %v", got, c.Properties())
	}
	e, _ := codec.For[codec.Entity]()
	if !e.OpenSchema() {
		t.Error("codec.Entity is not open")
	}
}
