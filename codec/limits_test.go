package codec_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/tablepatterns/tablepatterns/codec"
)

type limited struct {
	PartitionKey, RowKey string
	S                    string
	B                    []byte
	T                    *time.Time
	J                    []string       `table:",json"`
	Extra                map[string]any `table:",extra"`
}

func TestLimits(t *testing.T) {
	t.Parallel()
	c := mustCodec[limited](t)
	big := strings.Repeat("a", 32*1024) // 64 KiB of UTF-16: the limit exactly
	many := map[string]any{}
	for i := range codec.MaxProperties - 3 { // plus S, B, T: 252
		many[fmt.Sprintf("P%03d", i)] = int32(i)
	}
	tooMany := map[string]any{"Z1": int32(1), "Z2": int32(2), "Z3": int32(3)}
	for k, v := range many {
		tooMany[k] = v
	}
	huge := map[string]any{}
	for i := range 17 {
		huge[fmt.Sprintf("H%02d", i)] = strings.Repeat("x", 32*1024-10)
	}
	cases := []struct {
		name        string
		v           limited
		field       string
		size, limit int
	}{
		{"PartitionKey too long", limited{PartitionKey: strings.Repeat("k", 513)}, "PartitionKey", 1026, 1024},
		{"RowKey too long (non-BMP counts 4 bytes)", limited{RowKey: strings.Repeat("🎉", 257)}, "RowKey", 1028, 1024},
		{"PartitionKey slash", limited{PartitionKey: "a/b"}, "PartitionKey", 0, 0},
		{"RowKey backslash", limited{RowKey: `a\b`}, "RowKey", 0, 0},
		{"RowKey hash", limited{RowKey: "a#b"}, "RowKey", 0, 0},
		{"RowKey question mark", limited{RowKey: "a?b"}, "RowKey", 0, 0},
		{"RowKey tab", limited{RowKey: "a\tb"}, "RowKey", 0, 0},
		{"RowKey DEL", limited{RowKey: "a\x7fb"}, "RowKey", 0, 0},
		{"RowKey C1 control", limited{RowKey: "a\u0085b"}, "RowKey", 0, 0},
		{"RowKey invalid UTF-8", limited{RowKey: "a\xffb"}, "RowKey", 0, 0},
		{"string over 64 KiB", limited{S: big + "a"}, "S", 65538, 65536},
		{"string over 64 KiB in UTF-16 only", limited{S: strings.Repeat("é", 32*1024+1)}, "S", 65538, 65536},
		{"string invalid UTF-8", limited{S: "\xff"}, "S", 0, 0},
		{"json over 64 KiB", limited{J: []string{big}}, "J", 65544, 65536},
		{"binary over 64 KiB", limited{B: make([]byte, 64*1024+1)}, "B", 65537, 65536},
		{"DateTime before 1601", limited{T: ptr(time.Date(1600, 12, 31, 23, 59, 59, 0, time.UTC))}, "T", 0, 0},
		{"DateTime after 9999", limited{T: ptr(time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC))}, "T", 0, 0},
		{"too many properties", limited{S: "s", Extra: tooMany}, "(properties)", 253, 252},
		{"entity over 1 MiB", limited{Extra: huge}, "(entity)", 0, codec.MaxEntityBytes},
		{"invalid extra property name", limited{Extra: map[string]any{"a-b": "x"}}, "a-b", 0, 0},
		{"extra property name too long", limited{Extra: map[string]any{strings.Repeat("n", 256): "x"}}, strings.Repeat("n", 256), 256, 255},
		{"extra system name", limited{Extra: map[string]any{"Timestamp": time.Now()}}, "Timestamp", 0, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, err := c.Encode(&tc.v)
			if out != nil {
				t.Errorf("Encode returned %d bytes with an error", len(out))
			}
			if tc.limit == codec.MaxEntityBytes {
				var ie *codec.InvalidInputError
				if !errors.As(err, &ie) || ie.Limit != codec.MaxEntityBytes || ie.Size <= ie.Limit {
					t.Fatalf("err = %v", err)
				}
				return
			}
			assertInvalid(t, err, tc.field, tc.size, tc.limit)
			var ie *codec.InvalidInputError
			errors.As(err, &ie)
			if ie.Type != "codec_test.limited" {
				t.Errorf("Type = %q", ie.Type)
			}
		})
	}
	// At the limits exactly: accepted.
	ok := limited{PartitionKey: strings.Repeat("k", 512), RowKey: "", S: big, B: make([]byte, 64*1024), Extra: many,
		T: ptr(time.Date(1601, 1, 1, 0, 0, 0, 0, time.UTC))}
	if _, err := c.Encode(&ok); err != nil {
		t.Errorf("at the limits: %v", err)
	}
}

func TestValidateKey(t *testing.T) {
	t.Parallel()
	for _, good := range []string{"", "o'brien", "a b%2F+", "日本語", "EMPLOYEE_000123", strings.Repeat("x", 512)} {
		if err := codec.ValidateKey("RowKey", good); err != nil {
			t.Errorf("ValidateKey(%q) = %v", good, err)
		}
	}
	assertInvalid(t, codec.ValidateKey("PartitionKey", strings.Repeat("x", 513)), "PartitionKey", 1026, 1024)
	assertInvalid(t, codec.ValidateKey("RowKey", "a\nb"), "RowKey", 0, 0)
}

func TestValidateTableName(t *testing.T) {
	t.Parallel()
	for _, good := range []string{"abc", "Employees2024", "A" + strings.Repeat("b", 62), "Tables1"} {
		if err := codec.ValidateTableName(good); err != nil {
			t.Errorf("ValidateTableName(%q) = %v", good, err)
		}
	}
	for _, bad := range []string{"", "ab", "1abc", "ab-c", "ab_c", "tables", "TABLES", "A" + strings.Repeat("b", 63), "abç"} {
		err := codec.ValidateTableName(bad)
		assertInvalid(t, err, "table name", 0, 0)
	}
	var ie *codec.InvalidInputError
	errors.As(codec.ValidateTableName("ab"), &ie)
	if ie.Size != 2 || ie.Limit != 63 {
		t.Errorf("short name: %+v", ie)
	}
}

func TestValidatePropertyName(t *testing.T) {
	t.Parallel()
	for _, good := range []string{"a", "_x", "FirstName", "Age2", "名前", "PartitionKey", strings.Repeat("n", 255)} {
		if err := codec.ValidatePropertyName(good); err != nil {
			t.Errorf("ValidatePropertyName(%q) = %v", good, err)
		}
	}
	for _, bad := range []string{"", "2a", "a-b", "a.b", "a b", "a@b", "\xff"} {
		if err := codec.ValidatePropertyName(bad); !errors.Is(err, codec.ErrInvalidInput) {
			t.Errorf("ValidatePropertyName(%q) = %v", bad, err)
		}
	}
	assertInvalid(t, codec.ValidatePropertyName(strings.Repeat("n", 256)), strings.Repeat("n", 256), 256, 255)
}

func schemaErr[T any](t *testing.T, field string) {
	t.Helper()
	_, err := codec.For[T]()
	assertInvalid(t, err, field, 0, 0)
}

func TestSchemaErrors(t *testing.T) {
	t.Parallel()
	type keys struct{ PartitionKey, RowKey string }
	schemaErr[int](t, "")
	schemaErr[*keys](t, "")
	schemaErr[struct{ RowKey string }](t, "PartitionKey")
	schemaErr[struct{ PartitionKey string }](t, "RowKey")
	schemaErr[struct {
		PartitionKey int
		RowKey       string
	}](t, "PartitionKey")
	schemaErr[struct {
		keys
		P string `table:",pk"`
	}](t, "P")
	schemaErr[struct {
		keys
		U uint64
	}](t, "U")
	schemaErr[struct {
		keys
		U uint
	}](t, "U")
	schemaErr[struct {
		keys
		C chan int
	}](t, "C")
	schemaErr[struct {
		keys
		F func()
	}](t, "F")
	schemaErr[struct {
		keys
		X complex128
	}](t, "X")
	schemaErr[struct {
		keys
		P unsafe.Pointer
	}](t, "P")
	schemaErr[struct {
		keys
		I any
	}](t, "I")
	schemaErr[struct {
		keys
		M map[string]int
	}](t, "M")
	schemaErr[struct {
		keys
		S []string
	}](t, "S")
	schemaErr[struct {
		keys
		S struct{ A int }
	}](t, "S")
	schemaErr[struct {
		keys
		A [4]byte
	}](t, "A")
	schemaErr[struct {
		keys
		PP **int
	}](t, "PP")
	schemaErr[struct {
		keys
		A string `table:"Same"`
		B string `table:"Same"`
	}](t, "B")
	schemaErr[struct {
		keys
		A string `table:"has-dash"`
	}](t, "A")
	schemaErr[struct {
		keys
		A string `table:",bogus"`
	}](t, "A")
	schemaErr[struct {
		keys
		T string `table:"Timestamp"`
	}](t, "T")
	schemaErr[struct {
		keys
		E int `table:",etag"`
	}](t, "E")
	schemaErr[struct {
		keys
		X map[string]string `table:",extra"`
	}](t, "X")
	schemaErr[struct {
		keys
		F func() `table:",json"`
	}](t, "F")
}

func TestForIsCached(t *testing.T) {
	t.Parallel()
	a, b := mustCodec[limited](t), mustCodec[limited](t)
	if a != b {
		t.Error("For built the codec twice")
	}
}

func TestContainerAndQueueNames(t *testing.T) {
	for _, ok := range []string{"abc", "archive-jobs", "a1-b2-c3", strings.Repeat("a", 63)} {
		if err := codec.ValidateContainerName(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
		if err := codec.ValidateQueueName(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for _, bad := range []string{"ab", "Abc", "a_b", "-ab", "ab-", "a--b", strings.Repeat("a", 64), "ab c"} {
		var ie *codec.InvalidInputError
		if err := codec.ValidateContainerName(bad); !errors.As(err, &ie) || ie.Field != "container name" {
			t.Errorf("container %q: %v", bad, err)
		}
		if err := codec.ValidateQueueName(bad); !errors.As(err, &ie) || ie.Field != "queue name" {
			t.Errorf("queue %q: %v", bad, err)
		}
	}
}
