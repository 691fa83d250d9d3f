package codec_test

import (
	"errors"
	"math"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/tablepatterns/tablepatterns/codec"
)

func FuzzDecode(f *testing.F) {
	for _, seed := range []string{
		`{}`, `{"PartitionKey":"p","RowKey":"r"}`,
		`{"odata.etag":"W/\"1\"","PartitionKey":"Sales","RowKey":"000123","Timestamp@odata.type":"Edm.DateTime","Timestamp":"2024-01-02T03:04:05.1234567Z","FirstName":"Don","Age":34,"EmployeeID@odata.type":"Edm.Int64","EmployeeID":"12","Salary":"NaN","HireDate":"2024-01-02T03:04:05Z","Badge":"0f8fad5b-d9cb-469f-a165-70867728950e","Photo":"AQID","Active":true,"Small":1}`,
		`{"A":"\ud83c\udf89\u00e9\\","B":[1,{"c":"]"}],"C":-0.0e-5,"D":null}`,
		`{"X@odata.type":"Edm.Binary","X":"AQI","Y@odata.type":"Edm.Int32","Y":"7"}`,
		`{"A":"\ud800"}`, `{"`, `{"a":1,}`, "\xff",
	} {
		f.Add([]byte(seed))
	}
	c, err := codec.For[fixtureEmployee]()
	if err != nil {
		f.Fatal(err)
	}
	cx, _ := codec.For[withExtra]()
	f.Fuzz(func(t *testing.T, data []byte) {
		var v fixtureEmployee
		_ = c.Decode(data, &v)
		var w withExtra
		if err := cx.Decode(data, &w); err == nil {
			// Whatever decodes must encode (or be refused by a limit), never panic.
			_, _ = cx.Encode(&w)
		}
		if e, err := codec.DecodeEntity(data); err == nil {
			_, _ = codec.EncodeEntity(e)
		}
	})
}

type fuzzEntity struct {
	PartitionKey, RowKey string
	S                    string
	I32                  int32
	I64                  int64
	F                    float64
	F32                  float32
	B                    []byte
	T                    time.Time
	U8                   uint8
}

func FuzzRoundTrip(f *testing.F) {
	f.Add("Sales", "o'brien 1", "héllo \"x\"\n", int32(-5), int64(math.MaxInt64), 1.5, float32(0.1), []byte{0, 255}, int64(0), uint8(7))
	f.Add("", "", "", int32(0), int64(math.MinInt64), math.Inf(-1), float32(math.NaN()), []byte{}, int64(253402300799999999), uint8(255))
	f.Add("%2F+", "日本", "\u2028\x00", int32(math.MinInt32), int64(-1), 5e-324, float32(3.4e38), []byte(nil), int64(-11644473600000000), uint8(0))
	c, err := codec.For[fuzzEntity]()
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, pk, rk, s string, i32 int32, i64 int64, x float64, x32 float32, b []byte, micros int64, u8 uint8) {
		in := fuzzEntity{PartitionKey: pk, RowKey: rk, S: s, I32: i32, I64: i64, F: x, F32: x32, B: b,
			T: time.UnixMicro(micros).UTC(), U8: u8}
		data, err := c.Encode(&in)
		if err != nil {
			if !errors.Is(err, codec.ErrInvalidInput) {
				t.Fatalf("Encode error is not ErrInvalidInput: %v", err)
			}
			// Refusals must be real limit breaks.
			if codec.ValidateKey("PartitionKey", pk) == nil && codec.ValidateKey("RowKey", rk) == nil &&
				utf8.ValidString(s) && len(s) <= 32*1024 && len(b) <= codec.MaxBinaryBytes &&
				!in.T.Before(time.Date(1601, 1, 1, 0, 0, 0, 0, time.UTC)) && in.T.Year() < 10000 {
				t.Fatalf("valid entity refused: %v", err)
			}
			return
		}
		var out fuzzEntity
		if err := c.Decode(data, &out); err != nil {
			t.Fatalf("Decode(%s): %v", data, err)
		}
		same := func(a, b float64) bool {
			return a == b && math.Signbit(a) == math.Signbit(b) || math.IsNaN(a) && math.IsNaN(b)
		}
		if out.PartitionKey != in.PartitionKey || out.RowKey != in.RowKey || out.S != in.S || out.I32 != in.I32 ||
			out.I64 != in.I64 || !same(out.F, in.F) || !same(float64(out.F32), float64(in.F32)) || string(out.B) != string(in.B) ||
			(out.B == nil) != (in.B == nil) || !out.T.Equal(in.T) || out.U8 != in.U8 {
			t.Fatalf("round trip\n in: %#v\nout: %#v\njson: %s", in, out, data)
		}
	})
}
