package codec_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"net/netip"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/tablepatterns/tablepatterns/codec"
)

type (
	Level   int16
	Name    string
	Flag    bool
	Ratio   float32
	Blob    []byte
	Counter uint32
)

type allTypes struct {
	PartitionKey string
	RowKey       string
	S            string
	B            bool
	I8           int8
	I16          int16
	I32          int32
	U8           uint8
	U16          uint16
	I            int
	I64          int64
	U32          uint32
	F32          float32
	F64          float64
	T            time.Time
	Bin          []byte
	G            codec.GUID
	NamedLevel   Level
	NamedName    Name
	NamedFlag    Flag
	NamedRatio   Ratio
	NamedBlob    Blob
	NamedCounter Counter
	Addr         netip.Addr // TextMarshaler
	PS           *string
	PI64         *int64
	PT           *time.Time
	PG           *codec.GUID
	PAddr        *netip.Addr
	Tags         []string            `table:",json"`
	Meta         map[string]int      `table:",json"`
	Nested       *struct{ A, B int } `table:",json"`
}

func ptr[T any](v T) *T { return &v }

func mustCodec[T any](t testing.TB) *codec.Codec[T] {
	t.Helper()
	c, err := codec.For[T]()
	if err != nil {
		t.Fatalf("For: %v", err)
	}
	return c
}

func roundTrip[T any](t *testing.T, in T) T {
	t.Helper()
	c := mustCodec[T](t)
	data, err := c.Encode(&in)
	if err != nil {
		t.Fatalf("Encode: %v", err)
	}
	if !json.Valid(data) {
		t.Fatalf("Encode wrote invalid JSON: %s", data)
	}
	var out T
	if err := c.Decode(data, &out); err != nil {
		t.Fatalf("Decode(%s): %v", data, err)
	}
	return out
}

func TestRoundTripEveryType(t *testing.T) {
	t.Parallel()
	when := time.Date(2024, 1, 2, 3, 4, 5, 123456700, time.UTC)
	full := allTypes{
		PartitionKey: "Sales o'brien %2F+ é 日本", RowKey: `row "1" 🎉`,
		S: "hello\n\"world\"\u2028\x01", B: true, I8: -128, I16: -32768, I32: math.MinInt32, U8: 255, U16: 65535,
		I: math.MinInt64, I64: math.MaxInt64, U32: math.MaxUint32, F32: 1.5e-7, F64: -2.5e300, T: when,
		Bin: []byte{0, 1, 2, 250}, G: codec.NewGUID(), NamedLevel: -7, NamedName: "n", NamedFlag: true,
		NamedRatio: 0.1, NamedBlob: Blob("xyz"), NamedCounter: 7, Addr: netip.MustParseAddr("2001:db8::1"),
		PS: ptr(""), PI64: ptr(int64(-1)), PT: ptr(when), PG: ptr(codec.GUID{}), PAddr: ptr(netip.MustParseAddr("10.0.0.1")),
		Tags: []string{"a", "b"}, Meta: map[string]int{"x": 1}, Nested: &struct{ A, B int }{1, 2},
	}
	cases := map[string]allTypes{
		"full": full,
		"minimal": {
			PartitionKey: "", RowKey: "", T: time.Date(1601, 1, 1, 0, 0, 0, 0, time.UTC), Bin: []byte{},
		},
		"max time": {
			PartitionKey: "p", RowKey: "r", T: time.Date(9999, 12, 31, 23, 59, 59, 999999900, time.UTC),
		},
		"whole doubles": {
			PartitionKey: "p", RowKey: "r", F32: 3, F64: 1e21, T: when,
		},
	}
	for name, in := range cases {
		t.Run(name, func(t *testing.T) {
			out := roundTrip(t, in)
			if !reflect.DeepEqual(in, out) {
				t.Errorf("round trip mismatch\n in: %+v\nout: %+v", in, out)
			}
		})
	}
}

func TestRoundTripSpecialDoubles(t *testing.T) {
	t.Parallel()
	type D struct {
		PartitionKey, RowKey string
		A, B, C, Z           float64
		F                    float32
	}
	in := D{A: math.NaN(), B: math.Inf(1), C: math.Inf(-1), Z: math.Copysign(0, -1), F: float32(math.Inf(-1))}
	c := mustCodec[D](t)
	data, err := c.Encode(&in)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"A@odata.type":"Edm.Double","A":"NaN"`, `"B":"Infinity"`, `"C":"-Infinity"`, `"Z@odata.type":"Edm.Double"`} {
		if !bytes.Contains(data, []byte(want)) {
			t.Errorf("%s lacks %s", data, want)
		}
	}
	out := roundTrip(t, in)
	if !math.IsNaN(out.A) || !math.IsInf(out.B, 1) || !math.IsInf(out.C, -1) || !math.IsInf(float64(out.F), -1) || out.Z != 0 {
		t.Errorf("got %+v", out)
	}
}

func TestEncodeWireFormat(t *testing.T) {
	t.Parallel()
	type E struct {
		PartitionKey, RowKey string
		N                    int64
		Small                int32
		D                    float64
		T                    time.Time
		ETag                 string
		Timestamp            time.Time
	}
	in := E{PartitionKey: "o'brien", RowKey: "a b", N: 1 << 53, Small: 7, D: 2,
		T: time.Date(2024, 1, 2, 4, 4, 5, 100, time.FixedZone("CET", 3600)), ETag: "W/x", Timestamp: time.Now()}
	data, err := mustCodec[E](t).Encode(&in)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"PartitionKey":"o'brien","RowKey":"a b","N@odata.type":"Edm.Int64","N":"9007199254740992","Small":7,` +
		`"D@odata.type":"Edm.Double","D":2,"T@odata.type":"Edm.DateTime","T":"2024-01-02T03:04:05.0000001Z"}`
	if string(data) != want {
		t.Errorf("got  %s\nwant %s", data, want)
	}
}

func TestOmitEmptyAndNil(t *testing.T) {
	t.Parallel()
	type O struct {
		PartitionKey, RowKey string
		S                    string    `table:",omitempty"`
		N                    int64     `table:",omitempty"`
		T                    time.Time `table:",omitempty"`
		P                    *int32
		B                    []byte
		J                    []int `table:",json"`
		Kept                 string
	}
	data, err := mustCodec[O](t).Encode(&O{PartitionKey: "p", RowKey: "r"})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"PartitionKey":"p","RowKey":"r","Kept":""}`; string(data) != want {
		t.Errorf("got %s, want %s", data, want)
	}
}

func TestZeroTimeRefusedWithoutOmitEmpty(t *testing.T) {
	t.Parallel()
	type Z struct {
		PartitionKey, RowKey string
		When                 time.Time
	}
	_, err := mustCodec[Z](t).Encode(&Z{})
	assertInvalid(t, err, "When", 0, 0)
}

type Base struct {
	PartitionKey string
	RowKey       string
	ETag         string
	Timestamp    time.Time
}

type Audit struct {
	CreatedBy string
	Revision  int64
}

type withEmbedded struct {
	Base
	*Audit
	Name string
}

func TestEmbeddedStructsFlattened(t *testing.T) {
	t.Parallel()
	c := mustCodec[withEmbedded](t)
	in := withEmbedded{Base: Base{PartitionKey: "p", RowKey: "r"}, Audit: &Audit{CreatedBy: "me", Revision: 3}, Name: "n"}
	data, err := c.Encode(&in)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"PartitionKey":"p","RowKey":"r","CreatedBy":"me","Revision@odata.type":"Edm.Int64","Revision":"3","Name":"n"}`; string(data) != want {
		t.Errorf("got %s\nwant %s", data, want)
	}
	out := roundTrip(t, in)
	if !reflect.DeepEqual(in, out) {
		t.Errorf("got %+v", out)
	}
	// A nil embedded pointer: its properties are absent, and decoding allocates it.
	noAudit := withEmbedded{Base: Base{PartitionKey: "p", RowKey: "r"}}
	if data, err = c.Encode(&noAudit); err != nil || bytes.Contains(data, []byte("CreatedBy")) {
		t.Fatalf("got %s, %v", data, err)
	}
	if got := c.Select(); !reflect.DeepEqual(got, []string{"PartitionKey", "RowKey", "Timestamp", "CreatedBy", "Revision", "Name"}) {
		t.Errorf("Select = %v", got)
	}
	if !c.HasETag() {
		t.Error("HasETag = false")
	}
	c.SetETag(&in, "W/\"1\"")
	if c.ETag(&in) != "W/\"1\"" {
		t.Error("SetETag/ETag")
	}
	if pk, rk := c.Keys(&in); pk != "p" || rk != "r" {
		t.Errorf("Keys = %q %q", pk, rk)
	}
}

type tagged struct {
	Dept    string    `table:",pk"`
	ID      string    `table:",rk"`
	Version string    `table:",etag"`
	Changed time.Time `table:",timestamp"`
	First   string    `table:"FirstName"`
	Ignored string    `table:"-"`
	hidden  string
}

func TestTagsAndPropertyName(t *testing.T) {
	t.Parallel()
	c := mustCodec[tagged](t)
	for in, want := range map[string]string{
		"Dept": "PartitionKey", "ID": "RowKey", "Changed": "Timestamp", "First": "FirstName",
		"FirstName": "FirstName", "PartitionKey": "PartitionKey", "Timestamp": "Timestamp",
	} {
		if got, ok := c.PropertyName(in); !ok || got != want {
			t.Errorf("PropertyName(%q) = %q, %v; want %q", in, got, ok, want)
		}
	}
	for _, unknown := range []string{"Ignored", "hidden", "Version", "Nope"} {
		if got, ok := c.PropertyName(unknown); ok {
			t.Errorf("PropertyName(%q) = %q, true", unknown, got)
		}
	}
	v := tagged{Dept: "d", ID: "1", Version: "etag", First: "f", Ignored: "x", hidden: "h"}
	data, _ := c.Encode(&v)
	if want := `{"PartitionKey":"d","RowKey":"1","FirstName":"f"}`; string(data) != want {
		t.Errorf("got %s", data)
	}
}

type withExtra struct {
	PartitionKey, RowKey string
	Name                 string
	More                 map[string]any `table:",extra"`
}

func TestExtraPreservesUnknownProperties(t *testing.T) {
	t.Parallel()
	// Written by another application: properties withExtra does not map.
	stored := `{"odata.metadata":"m","odata.etag":"W/\"1\"","PartitionKey":"p","RowKey":"r",` +
		`"Timestamp@odata.type":"Edm.DateTime","Timestamp":"2024-01-02T03:04:05.1234567Z",` +
		`"Name":"n","Count":5,"Big@odata.type":"Edm.Int64","Big":"9007199254740993","Ratio":1.5,` +
		`"When@odata.type":"Edm.DateTime","When":"2024-01-02T03:04:05Z","Raw@odata.type":"Edm.Binary","Raw":"AQI=",` +
		`"Id@odata.type":"Edm.Guid","Id":"0f8fad5b-d9cb-469f-a165-70867728950e","Ok":true,"Text":"t","Whole@odata.type":"Edm.Double","Whole":2}`
	c := mustCodec[withExtra](t)
	var v withExtra
	if err := c.Decode([]byte(stored), &v); err != nil {
		t.Fatal(err)
	}
	g, _ := codec.ParseGUID("0f8fad5b-d9cb-469f-a165-70867728950e")
	want := map[string]any{
		"Count": int32(5), "Big": int64(9007199254740993), "Ratio": 1.5,
		"When": time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC), "Raw": []byte{1, 2}, "Id": g, "Ok": true, "Text": "t", "Whole": 2.0,
	}
	if !reflect.DeepEqual(v.More, want) {
		t.Fatalf("extra = %#v\nwant %#v", v.More, want)
	}
	// A Replace writes them back, with their types.
	v.Name = "changed"
	data, err := c.Encode(&v)
	if err != nil {
		t.Fatal(err)
	}
	e, err := codec.DecodeEntity(data)
	if err != nil {
		t.Fatal(err)
	}
	want["Name"] = "changed"
	if !reflect.DeepEqual(e.Properties, want) {
		t.Errorf("re-encoded = %#v", e.Properties)
	}
	// Merge of one property picked from the extra map.
	data, err = c.EncodeProperties(&v, "Big")
	if err != nil || string(data) != `{"PartitionKey":"p","RowKey":"r","Big@odata.type":"Edm.Int64","Big":"9007199254740993"}` {
		t.Errorf("EncodeProperties = %s, %v", data, err)
	}
	// An extra entry that duplicates a field is refused.
	v.More["Name"] = "dup"
	_, err = c.Encode(&v)
	assertInvalid(t, err, "Name", 0, 0)
}

func TestEncodeProperties(t *testing.T) {
	t.Parallel()
	c := mustCodec[tagged](t)
	v := tagged{Dept: "d", ID: "1", First: "f"}
	data, err := c.EncodeProperties(&v, "First")
	if err != nil || string(data) != `{"PartitionKey":"d","RowKey":"1","FirstName":"f"}` {
		t.Errorf("got %s, %v", data, err)
	}
	data, err = c.EncodeProperties(&v)
	if err != nil || string(data) != `{"PartitionKey":"d","RowKey":"1"}` {
		t.Errorf("got %s, %v", data, err)
	}
	_, err = c.EncodeProperties(&v, "Nope")
	assertInvalid(t, err, "Nope", 0, 0)
}

// Payloads as the service and the other official SDKs write them.
type fixtureEmployee struct {
	PartitionKey string
	RowKey       string
	ETag         string
	Timestamp    time.Time
	FirstName    string
	Age          int32
	EmployeeID   int64
	Salary       float64
	HireDate     time.Time
	Badge        codec.GUID
	Photo        []byte
	Active       bool
	Small        int8
}

func TestDecodeFixtures(t *testing.T) {
	t.Parallel()
	badge, _ := codec.ParseGUID("0f8fad5b-d9cb-469f-a165-70867728950e")
	base := fixtureEmployee{PartitionKey: "Sales", RowKey: "000123", FirstName: "Don", Age: 34, Active: true, Badge: badge}
	cases := []struct {
		name string
		json string
		want func(e *fixtureEmployee)
	}{
		{
			name: "service fullmetadata (.NET Azure.Data.Tables)",
			json: `{"odata.metadata":"https://acct.table.core.windows.net/$metadata#Employees/@Element",
				"odata.type":"acct.Employees","odata.id":"https://acct.table.core.windows.net/Employees(PartitionKey='Sales',RowKey='000123')",
				"odata.etag":"W/\"datetime'2024-01-02T03%3A04%3A05.1234567Z'\"","odata.editLink":"Employees(PartitionKey='Sales',RowKey='000123')",
				"PartitionKey":"Sales","RowKey":"000123","Timestamp@odata.type":"Edm.DateTime","Timestamp":"2024-01-02T03:04:05.1234567Z",
				"FirstName":"Don","Age":34,"EmployeeID@odata.type":"Edm.Int64","EmployeeID":"1234567890123",
				"Salary@odata.type":"Edm.Double","Salary":50000.5,"HireDate@odata.type":"Edm.DateTime","HireDate":"2019-03-14T09:00:00.0000000Z",
				"Badge@odata.type":"Edm.Guid","Badge":"0f8fad5b-d9cb-469f-a165-70867728950e","Photo@odata.type":"Edm.Binary","Photo":"AQID","Active":true,"Small":-5}`,
			want: func(e *fixtureEmployee) {
				e.ETag = `W/"datetime'2024-01-02T03%3A04%3A05.1234567Z'"`
				e.Timestamp = time.Date(2024, 1, 2, 3, 4, 5, 123456700, time.UTC)
				e.EmployeeID, e.Salary, e.Photo, e.Small = 1234567890123, 50000.5, []byte{1, 2, 3}, -5
				e.HireDate = time.Date(2019, 3, 14, 9, 0, 0, 0, time.UTC)
			},
		},
		{
			name: "JS @azure/data-tables: ms DateTime, whole double as bare int, no annotation",
			json: `{"PartitionKey":"Sales","RowKey":"000123","FirstName":"Don","Age":34,"EmployeeID@odata.type":"Edm.Int64","EmployeeID":"9007199254740993",
				"Salary":50000,"HireDate@odata.type":"Edm.DateTime","HireDate":"2019-03-14T09:00:00.123Z","Badge@odata.type":"Edm.Guid","Badge":"0F8FAD5B-D9CB-469F-A165-70867728950E","Active":true}`,
			want: func(e *fixtureEmployee) {
				e.EmployeeID, e.Salary = 9007199254740993, 50000
				e.HireDate = time.Date(2019, 3, 14, 9, 0, 0, 123000000, time.UTC)
			},
		},
		{
			name: "Python azure-data-tables: DateTime without fraction, Int64 as bare number, NaN",
			json: `{"PartitionKey": "Sales", "RowKey": "000123", "FirstName": "Don", "Age": 34, "EmployeeID": 42,
				"Salary@odata.type": "Edm.Double", "Salary": "NaN", "HireDate": "2024-01-02T03:04:05Z", "Badge@odata.type": "Edm.Guid",
				"Badge": "0f8fad5b-d9cb-469f-a165-70867728950e", "Active": true, "Unknown": {"nested": [1, "]"]}}`,
			want: func(e *fixtureEmployee) {
				e.EmployeeID, e.Salary = 42, math.NaN()
				e.HireDate = time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)
			},
		},
		{
			name: "offset DateTime and escaped strings",
			json: `{"PartitionKey":"Sal\u0065s","RowKey":"000123","FirstName":"D\u006fn","Age":34.0,"HireDate":"2024-01-02T04:04:05.5+01:00",
				"Badge":"{0f8fad5b-d9cb-469f-a165-70867728950e}","Active":true,"Photo":"AQI"}`,
			want: func(e *fixtureEmployee) {
				e.HireDate = time.Date(2024, 1, 2, 3, 4, 5, 500000000, time.UTC)
				e.Photo = []byte{1, 2}
			},
		},
	}
	c := mustCodec[fixtureEmployee](t)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			want := base
			tc.want(&want)
			got := fixtureEmployee{FirstName: "stale", Age: 99}
			if err := c.Decode([]byte(tc.json), &got); err != nil {
				t.Fatal(err)
			}
			if math.IsNaN(want.Salary) && math.IsNaN(got.Salary) {
				want.Salary, got.Salary = 0, 0
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("got  %+v\nwant %+v", got, want)
			}
		})
	}
}

func TestDecodeErrors(t *testing.T) {
	t.Parallel()
	c := mustCodec[fixtureEmployee](t)
	for name, tc := range map[string]struct{ json, field string }{
		"int8 overflow":      {`{"Small":200}`, "Small"},
		"int32 overflow":     {`{"Age":2147483648}`, "Age"},
		"fraction into int":  {`{"Age":1.5}`, "Age"},
		"int64 overflow":     {`{"EmployeeID":"9223372036854775808"}`, "EmployeeID"},
		"string into int":    {`{"Age":"x"}`, "Age"},
		"bool wrong kind":    {`{"Active":"true"}`, "Active"},
		"bad time":           {`{"HireDate":"2024-02-30T00:00:00Z"}`, "HireDate"},
		"bad guid":           {`{"Badge":"nope"}`, "Badge"},
		"bad base64":         {`{"Photo":"@@"}`, "Photo"},
		"number into string": {`{"FirstName":5}`, "FirstName"},
		"bad key":            {`{"PartitionKey":5}`, "PartitionKey"},
		"truncated":          {`{"FirstName":"x"`, ""},
		"trailing":           {`{} {}`, ""},
		"not an object":      {`[1]`, ""},
		"bad literal":        {`{"Active":tru}`, ""},
	} {
		t.Run(name, func(t *testing.T) {
			var v fixtureEmployee
			err := c.Decode([]byte(tc.json), &v)
			var de *codec.DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("err = %v, want *DecodeError", err)
			}
			if de.Field != tc.field {
				t.Errorf("Field = %q, want %q (%v)", de.Field, tc.field, err)
			}
		})
	}
}

func TestEntityRoundTrip(t *testing.T) {
	t.Parallel()
	g := codec.NewGUID()
	in := &codec.Entity{PartitionKey: "p'1", RowKey: "r", Properties: map[string]any{
		"S": "s", "B": false, "I32": int32(-3), "I64": int64(1) << 40, "F": 2.0, "T": time.Date(2020, 5, 6, 7, 8, 9, 100, time.UTC),
		"Bin": []byte("x"), "G": g, "Empty": "",
	}}
	data, err := codec.EncodeEntity(in)
	if err != nil {
		t.Fatal(err)
	}
	out, err := codec.DecodeEntity(data)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(in, out) {
		t.Errorf("got %#v\nwant %#v", out, in)
	}
	in.Properties["Bad"] = struct{}{}
	_, err = codec.EncodeEntity(in)
	assertInvalid(t, err, "Bad", 0, 0)
	delete(in.Properties, "Bad")
	in.Properties["RowKey"] = "x"
	_, err = codec.EncodeEntity(in)
	assertInvalid(t, err, "RowKey", 0, 0)
}

func TestDecodeEntityTyping(t *testing.T) {
	t.Parallel()
	e, err := codec.DecodeEntity([]byte(`{"PartitionKey":"p","RowKey":"r","odata.etag":"e","A":1,"B":2147483648,"C":1.5,"D":"3","E":null,"F":-0.0}`))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"A": int32(1), "B": float64(2147483648), "C": 1.5, "D": "3", "F": math.Copysign(0, -1)}
	if !reflect.DeepEqual(e.Properties, want) || e.ETag != "e" {
		t.Errorf("got %#v", e)
	}
}

func TestGUID(t *testing.T) {
	t.Parallel()
	g := codec.NewGUID()
	if g[6]>>4 != 4 || g[8]>>6 != 2 {
		t.Errorf("not a v4 GUID: %s", g)
	}
	s := g.String()
	if len(s) != 36 || strings.ToLower(s) != s {
		t.Errorf("String = %q", s)
	}
	back, err := codec.ParseGUID(strings.ToUpper(s))
	if err != nil || back != g {
		t.Errorf("ParseGUID = %v, %v", back, err)
	}
	text, _ := g.MarshalText()
	var u codec.GUID
	if err := u.UnmarshalText(text); err != nil || u != g {
		t.Errorf("UnmarshalText = %v, %v", u, err)
	}
	for _, bad := range []string{"", "0f8fad5b-d9cb-469f-a165-70867728950", "0f8fad5bxd9cb-469f-a165-70867728950e", "gf8fad5b-d9cb-469f-a165-70867728950e"} {
		if _, err := codec.ParseGUID(bad); !errors.Is(err, codec.ErrInvalidInput) {
			t.Errorf("ParseGUID(%q) err = %v", bad, err)
		}
	}
}

// assertInvalid checks that err is an *InvalidInputError naming field, with size and limit
// (when limit > 0).
func assertInvalid(t *testing.T, err error, field string, size, limit int) {
	t.Helper()
	if !errors.Is(err, codec.ErrInvalidInput) {
		t.Fatalf("err = %v, want ErrInvalidInput", err)
	}
	var ie *codec.InvalidInputError
	if !errors.As(err, &ie) {
		t.Fatalf("err = %T, want *InvalidInputError", err)
	}
	if ie.Field != field {
		t.Errorf("Field = %q, want %q (%v)", ie.Field, field, err)
	}
	if limit > 0 && (ie.Size != size || ie.Limit != limit) {
		t.Errorf("Size, Limit = %d, %d; want %d, %d (%v)", ie.Size, ie.Limit, size, limit, err)
	}
}

// A bare number with a fraction or an exponent is a double even when it is whole: typed
// Int32 it would be written back as another type than the one stored.
func TestDynamicNumberKeepsItsForm(t *testing.T) {
	e, err := codec.DecodeEntity([]byte(`{"PartitionKey":"p","RowKey":"r","A":5,"B":5.0,"C":5e0,"D":-0.0,"E":2147483648}`))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"A": int32(5), "B": 5.0, "C": 5.0, "E": 2147483648.0}
	for k, v := range want {
		if e.Properties[k] != v {
			t.Errorf("%s = %#v, want %#v", k, e.Properties[k], v)
		}
	}
	if d, ok := e.Properties["D"].(float64); !ok || d != 0 {
		t.Errorf("D = %#v, want float64 -0", e.Properties["D"])
	}
}
