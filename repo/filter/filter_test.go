package filter

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/tablepatterns/tablepatterns/internal/errs"
)

type (
	dept     string
	flag     bool
	age      int32
	big      int64
	ratio    float64
	blob     []byte
	smallInt int
	fakeGUID [16]byte
	myTime   time.Time
)

func (fakeGUID) String() string { return "00000000-0000-0000-0000-000000000000" }

func TestRender(t *testing.T) {
	t.Parallel()
	ts := time.Date(2024, 1, 2, 3, 4, 5, 123456789, time.UTC)
	tokyo := time.FixedZone("JST", 9*3600)
	tests := []struct {
		name string
		e    Expr
		want string
	}{
		{"zero", Expr{}, ""},
		{"string", Eq("LastName", "Smith"), "LastName eq 'Smith'"},
		{"empty string", Eq("LastName", ""), "LastName eq ''"},
		{"quote doubled", Eq("LastName", "O'Brien"), "LastName eq 'O''Brien'"},
		{"only quotes", Eq("LastName", "''"), "LastName eq ''''''"},
		{"url specials untouched", Eq("Name", "a+b%20&c#d?e=f/g\\h"), `Name eq 'a+b%20&c#d?e=f/g\h'`},
		{"non-ascii", Eq("Dept", "マーケティング"), "Dept eq 'マーケティング'"},
		{"control chars", Eq("Note", "a\tb\nc"), "Note eq 'a\tb\nc'"},
		{"named string", Ne("Dept", dept("Sales")), "Dept ne 'Sales'"},
		{"bool", Eq("Active", true), "Active eq true"},
		{"named bool", Eq("Active", flag(false)), "Active eq false"},
		{"int32", Gt("Age", int32(30)), "Age gt 30"},
		{"int", Ge("Age", 30), "Age ge 30"},
		{"int min32", Ge("Age", math.MinInt32), "Age ge -2147483648"},
		{"int8", Lt("Age", int8(-5)), "Age lt -5"},
		{"int16", Le("Age", int16(300)), "Age le 300"},
		{"uint8", Eq("Age", uint8(255)), "Age eq 255"},
		{"uint16", Eq("Age", uint16(65535)), "Age eq 65535"},
		{"named int32", Eq("Age", age(47)), "Age eq 47"},
		{"named int", Eq("Age", smallInt(7)), "Age eq 7"},
		{"int64", Eq("Ticks", int64(1)<<40), "Ticks eq 1099511627776L"},
		{"int64 min", Eq("Ticks", int64(math.MinInt64)), "Ticks eq -9223372036854775808L"},
		{"named int64", Eq("Ticks", big(-3)), "Ticks eq -3L"},
		{"uint32", Eq("Count", uint32(math.MaxUint32)), "Count eq 4294967295L"},
		{"double whole", Eq("Amount", 1.0), "Amount eq 1.0"},
		{"double zero", Eq("Amount", 0.0), "Amount eq 0.0"},
		{"double neg zero", Eq("Amount", math.Copysign(0, -1)), "Amount eq -0.0"},
		{"double frac", Le("Amount", 200.30), "Amount le 200.3"},
		{"double big", Gt("Amount", 1e21), "Amount gt 1.0E+21"},
		{"double big frac", Gt("Amount", 1.5e300), "Amount gt 1.5E+300"},
		{"double below exp", Gt("Amount", 1e20), "Amount gt 100000000000000000000.0"},
		{"double tiny", Gt("Amount", 1.5e-7), "Amount gt 1.5E-07"},
		{"double small", Gt("Amount", 0.000001), "Amount gt 0.000001"},
		{"double max", Lt("Amount", math.MaxFloat64), "Amount lt 1.7976931348623157E+308"},
		{"float32 shortest", Eq("Amount", float32(0.1)), "Amount eq 0.1"},
		{"float32 whole", Eq("Amount", float32(3)), "Amount eq 3.0"},
		{"named double", Eq("Amount", ratio(-2)), "Amount eq -2.0"},
		{"datetime", Ge("Timestamp", ts), "Timestamp ge datetime'2024-01-02T03:04:05.1234567Z'"},
		{"datetime to utc", Ge("Timestamp", time.Date(2024, 1, 2, 12, 0, 0, 0, tokyo)), "Timestamp ge datetime'2024-01-02T03:00:00.0000000Z'"},
		{"datetime min", Ge("When", time.Date(1601, 1, 1, 0, 0, 0, 0, time.UTC)), "When ge datetime'1601-01-01T00:00:00.0000000Z'"},
		{"datetime max", Le("When", time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC)), "When le datetime'9999-12-31T23:59:59.9999999Z'"},
		{"binary", Eq("Data", []byte{0x0a, 0x1b, 0xff}), "Data eq X'0a1bff'"},
		{"binary empty", Eq("Data", []byte{}), "Data eq X''"},
		{"named binary", Eq("Data", blob{1}), "Data eq X'01'"},
		{"guid", Eq("Id", GUID("C9DA6455-213D-42C9-9A79-3E9149A57833")), "Id eq guid'c9da6455-213d-42c9-9a79-3e9149a57833'"},
		{"guid via stringer", Eq("Id", GUID(fakeGUID{}.String())), "Id eq guid'00000000-0000-0000-0000-000000000000'"},
		{"underscore name", Eq("_x1", 1), "_x1 eq 1"},
		{"unicode name", Eq("名前", "x"), "名前 eq 'x'"},
		{"keyword-like name", Eq("Order", "x"), "Order eq 'x'"},

		{"partition", PartitionKey("Sales"), "PartitionKey eq 'Sales'"},
		{"partition empty", PartitionKey(""), "PartitionKey eq ''"},
		{"point", Point("Sales", "2"), "(PartitionKey eq 'Sales') and (RowKey eq '2')"},
		{"point quotes", Point("o'k", "a'b"), "(PartitionKey eq 'o''k') and (RowKey eq 'a''b')"},
		{"range", RowKeyRange("Sales", "S", "T"), "(PartitionKey eq 'Sales') and (RowKey ge 'S') and (RowKey lt 'T')"},
		{"range open lo", RowKeyRange("Sales", "", "T"), "(PartitionKey eq 'Sales') and (RowKey lt 'T')"},
		{"range open hi", RowKeyRange("Sales", "S", ""), "(PartitionKey eq 'Sales') and (RowKey ge 'S')"},
		{"range open both", RowKeyRange("Sales", "", ""), "PartitionKey eq 'Sales'"},
		{"prefix", RowKeyPrefix("Sales", "S"), "(PartitionKey eq 'Sales') and (RowKey ge 'S') and (RowKey lt 'T')"},
		{"prefix multi", RowKeyPrefix("Sales", "emp_00"), "(PartitionKey eq 'Sales') and (RowKey ge 'emp_00') and (RowKey lt 'emp_01')"},
		{"prefix quote", RowKeyPrefix("p", "a'"), "(PartitionKey eq 'p') and (RowKey ge 'a''') and (RowKey lt 'a(')"},
		{"prefix ends before quote", RowKeyPrefix("p", "a&"), "(PartitionKey eq 'p') and (RowKey ge 'a&') and (RowKey lt 'a''')"},
		{"prefix empty", RowKeyPrefix("Sales", ""), "PartitionKey eq 'Sales'"},
		{"prefix max rune", RowKeyPrefix("p", "a\U0010FFFF"), "(PartitionKey eq 'p') and (RowKey ge 'a\U0010FFFF') and (RowKey lt 'b')"},
		{"prefix all max", RowKeyPrefix("p", "\U0010FFFF"), "(PartitionKey eq 'p') and (RowKey ge '\U0010FFFF')"},
		{"prefix surrogate gap", RowKeyPrefix("p", "a\uD7FF"), "(PartitionKey eq 'p') and (RowKey ge 'a\uD7FF') and (RowKey lt 'a\uE000')"},
		{"prefix bmp max", RowKeyPrefix("p", "a\uFFFF"), "(PartitionKey eq 'p') and (RowKey ge 'a\uFFFF') and (RowKey lt 'a\U00010000')"},
		{"partition range", PartitionRange("A", "M"), "(PartitionKey ge 'A') and (PartitionKey lt 'M')"},
		{"partition range open", PartitionRange("", "M"), "PartitionKey lt 'M'"},
		{"partition range all", PartitionRange("", ""), ""},
		{"partition prefix", PartitionPrefix("03|"), "(PartitionKey ge '03|') and (PartitionKey lt '03}')"},
		{"partition prefix empty", PartitionPrefix(""), ""},
		{"partition scan", And(PartitionKey("Sales"), Eq("LastName", "Smith")), "(PartitionKey eq 'Sales') and (LastName eq 'Smith')"},
		{"table scan", Eq("LastName", "Jones"), "LastName eq 'Jones'"},

		{"and one", And(Eq("A", 1)), "A eq 1"},
		{"and none", And(), ""},
		{"and zeros", And(Expr{}, Expr{}), ""},
		{"and skips zero", And(Expr{}, Eq("A", 1), Expr{}, Eq("B", 2)), "(A eq 1) and (B eq 2)"},
		{"and flattens", And(And(Eq("A", 1), Eq("B", 2)), Eq("C", 3)), "(A eq 1) and (B eq 2) and (C eq 3)"},
		{"or", Or(Eq("A", 1), Eq("B", 2)), "(A eq 1) or (B eq 2)"},
		{"or in and", And(PartitionKey("Sales"), Or(Eq("RowKey", "121"), Eq("RowKey", "322"))),
			"(PartitionKey eq 'Sales') and ((RowKey eq '121') or (RowKey eq '322'))"},
		{"and in or", Or(And(Eq("A", 1), Eq("B", 2)), Eq("C", 3)), "((A eq 1) and (B eq 2)) or (C eq 3)"},
		{"not", Not(Eq("A", 1)), "not (A eq 1)"},
		{"not and", Not(And(Eq("A", 1), Eq("B", 2))), "not ((A eq 1) and (B eq 2))"},
		{"and not", And(Not(Eq("A", 1)), Eq("B", 2)), "(not (A eq 1)) and (B eq 2)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if err := tt.e.Err(); err != nil {
				t.Fatalf("Err() = %v", err)
			}
			if got := tt.e.String(); got != tt.want {
				t.Errorf("String() = %q, want %q", got, tt.want)
			}
			if tt.e.IsZero() != (tt.want == "") {
				t.Errorf("IsZero() = %v for %q", tt.e.IsZero(), tt.want)
			}
			if tt.want != "" {
				if _, err := tokenize(tt.e.String()); err != nil {
					t.Errorf("output does not tokenize: %v", err)
				}
			}
		})
	}
}

func TestInvalid(t *testing.T) {
	t.Parallel()
	var nilBytes *[]byte
	tests := []struct {
		name string
		e    Expr
	}{
		{"empty name", Eq("", "x")},
		{"name with space", Eq("Last Name", "x")},
		{"name digit first", Eq("1abc", "x")},
		{"name dash", Eq("first-name", "x")},
		{"name dot", Eq("a.b", "x")},
		{"name injection", Eq("Name eq 'x' or true", "y")},
		{"name paren", Eq("Name)", "y")},
		{"name quote", Eq("Name'", "y")},
		{"name invalid utf8", Eq("Na\xffme", "y")},
		{"name too long", Eq(strings.Repeat("a", 256), "y")},
		{"name too long utf16", Eq(strings.Repeat("𝒜", 128), "y")},
		{"name keyword true", Eq("true", true)},
		{"name keyword and", Eq("and", 1)},
		{"name keyword case", Eq("NULL", 1)},
		{"name keyword inf", Eq("INF", 1.0)},
		{"name keyword nan", Eq("NaN", 1.0)},
		{"nil value", Eq("A", nil)},
		{"nil pointer", Eq("A", nilBytes)},
		{"pointer", Eq("A", new(string))},
		{"uint64", Eq("A", uint64(1))},
		{"uint", Eq("A", uint(1))},
		{"int out of int32", Eq("A", math.MaxInt32+1)},
		{"int below int32", Eq("A", math.MinInt32-1)},
		{"NaN", Eq("A", math.NaN())},
		{"+Inf", Eq("A", math.Inf(1))},
		{"-Inf float32", Eq("A", float32(math.Inf(-1)))},
		{"invalid utf8 value", Eq("A", "a\xffb")},
		{"surrogate in utf8", Eq("A", "\xed\xa0\x80")},
		{"bad guid", Eq("Id", GUID("not-a-guid"))},
		{"guid braces", Eq("Id", GUID("{c9da6455-213d-42c9-9a79-3e9149a57833}"))},
		{"guid injection", Eq("Id", GUID("c9da6455-213d-42c9-9a79-3e9149a57833' or true or '"))},
		{"guid array", Eq("Id", fakeGUID{})},
		{"named time", Eq("When", myTime(time.Now()))},
		{"zero time", Eq("When", time.Time{})},
		{"time after 9999", Eq("When", time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC))},
		{"time before 1601", Eq("When", time.Date(1600, 12, 31, 23, 59, 59, 0, time.UTC))},
		{"slice", Eq("A", []string{"x"})},
		{"map", Eq("A", map[string]int{})},
		{"struct", Eq("A", struct{}{})},
		{"complex", Eq("A", complex(1, 2))},
		{"not zero", Not(Expr{})},
		{"prefix invalid utf8", RowKeyPrefix("p", "a\xff")},
		{"partition prefix invalid utf8", PartitionPrefix("\xff")},
		{"and propagates", And(Eq("A", 1), Eq("B c", 2))},
		{"or propagates", Or(Eq("A", math.NaN()), Eq("B", 2))},
		{"not propagates", Not(Eq("", 1))},
		{"range propagates", RowKeyRange("p", "\xff", "")},
		{"and invalid only", And(Eq("A", nil))},
		{"too many comparisons", And(manyComparisons(MaxComparisons + 1)...)},
		{"too many nested", And(Or(manyComparisons(8)...), Or(manyComparisons(8)...))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := tt.e.Err()
			if err == nil {
				t.Fatalf("Err() = nil, String() = %q", tt.e.String())
			}
			if !errors.Is(err, errs.ErrInvalidInput) {
				t.Errorf("errors.Is(%v, ErrInvalidInput) = false", err)
			}
			var iie *errs.InvalidInputError
			if !errors.As(err, &iie) {
				t.Errorf("Err() is %T, want *errs.InvalidInputError", err)
			}
			if tt.e.String() != invalidText {
				t.Errorf("String() = %q, want the fixed invalid text", tt.e.String())
			}
			if tt.e.IsZero() {
				t.Error("an invalid Expr reports IsZero")
			}
			// Combining keeps the error.
			for _, c := range []Expr{And(PartitionKey("p"), tt.e), Or(tt.e, PartitionKey("p")), Not(tt.e)} {
				if c.Err() == nil {
					t.Errorf("combination lost the error: %q", c.String())
				}
			}
			if !utf8.ValidString(err.Error()) {
				t.Errorf("error message is not valid UTF-8: %q", err.Error())
			}
		})
	}
}

func manyComparisons(n int) []Expr {
	out := make([]Expr, n)
	for i := range out {
		out[i] = Eq("A", i)
	}
	return out
}

func TestComparisonLimit(t *testing.T) {
	t.Parallel()
	e := And(manyComparisons(MaxComparisons)...)
	if err := e.Err(); err != nil {
		t.Fatalf("%d comparisons refused: %v", MaxComparisons, err)
	}
	if got := e.Comparisons(); got != MaxComparisons {
		t.Errorf("Comparisons() = %d, want %d", got, MaxComparisons)
	}
	if got := Not(RowKeyPrefix("p", "a")).Comparisons(); got != 3 {
		t.Errorf("Comparisons() of a prefix query = %d, want 3", got)
	}
	var iie *errs.InvalidInputError
	if err := And(e, Eq("B", 1)).Err(); !errors.As(err, &iie) || iie.Size != MaxComparisons+1 || iie.Limit != MaxComparisons {
		t.Errorf("Err() = %#v, want size %d limit %d", err, MaxComparisons+1, MaxComparisons)
	}
}

// The injection boundary: whatever a value contains, the filter has the same tokens as with
// a benign value, and each value comes back out of its literal unchanged.
var hostileValues = []string{
	"x' or PartitionKey ne '",
	"')",
	"' or 1 eq 1 or '",
	"'",
	"''",
	"'''",
	"\\'",
	"x') or (true",
	"' or true) or ('",
	"Smith' and RowKey ge '",
	"\u2019 or true or \u2018", // typographic quotes are ordinary characters
	"\uff07 or true",           // fullwidth apostrophe
	"ʼ or 1 eq 1",              // modifier letter apostrophe
	"%27 or true or %27",       // already percent-encoded quote: stays literal text
	"&$filter=true",
	"#",
	"+ or +",
	"\x00",
	"\r\n'or\ttrue",
	"datetime'2024-01-01T00:00:00Z'",
	"guid'00000000-0000-0000-0000-000000000000'",
	"X'00'",
	"not (PartitionKey eq 'x')",
	strings.Repeat("'", 1000),
}

func TestInjectionValue(t *testing.T) {
	t.Parallel()
	end := func(v string) string { e, _ := prefixEnd(v); return e }
	shapes := []struct {
		name  string
		build func(v string) Expr
		lits  func(v string) []string // the string literals the filter must hold, in order
	}{
		{"Eq", func(v string) Expr { return Eq("LastName", v) },
			func(v string) []string { return []string{v} }},
		{"Ne", func(v string) Expr { return Ne("LastName", v) },
			func(v string) []string { return []string{v} }},
		{"partition scan", func(v string) Expr { return And(PartitionKey(v), Eq("LastName", v)) },
			func(v string) []string { return []string{v, v} }},
		{"point", func(v string) Expr { return Point(v, v) },
			func(v string) []string { return []string{v, v} }},
		{"range", func(v string) Expr { return RowKeyRange(v, v, v+"z") },
			func(v string) []string { return []string{v, v, v + "z"} }},
		{"prefix", func(v string) Expr { return RowKeyPrefix(v, v) },
			func(v string) []string { return []string{v, v, end(v)} }},
		{"not or", func(v string) Expr { return Not(Or(Eq("A", v), Eq("B", dept(v)))) },
			func(v string) []string { return []string{v, v} }},
	}
	for _, s := range shapes {
		t.Run(s.name, func(t *testing.T) {
			t.Parallel()
			want, err := shape(s.build("benign").String())
			if err != nil {
				t.Fatal(err)
			}
			for _, v := range hostileValues {
				e := s.build(v)
				if err := e.Err(); err != nil {
					t.Fatalf("value %q: Err() = %v", v, err)
				}
				got, err := shape(e.String())
				if err != nil {
					t.Fatalf("value %q: %q does not tokenize: %v", v, e.String(), err)
				}
				if got != want {
					t.Errorf("value %q changed the structure:\n got %s\nwant %s\ntext %s", v, got, want, e.String())
				}
				lits, _ := stringLiterals(e.String())
				if wantLits := s.lits(v); !slices.Equal(lits, wantLits) {
					t.Errorf("value %q: literals decode to %q, want %q", v, lits, wantLits)
				}
			}
		})
	}
}

func TestInjectionName(t *testing.T) {
	t.Parallel()
	names := []string{
		"Name eq 'x' or true",
		"Name eq 'x') or (true",
		"true",
		"false",
		"null",
		"not",
		"Or",
		"A or B",
		"A)",
		"(A",
		"A'",
		"A\x00",
		"A\u00a0B", // no-break space
		"A\u2028B", // line separator
		"A\u200bB", // zero-width space (format character)
		"A%20or%20true",
		"A+or+true",
		"X'00'",
		"guid'x'",
		"PartitionKey ne ''",
	}
	for _, n := range names {
		for _, e := range []Expr{Eq(n, "v"), Lt(n, 1), And(PartitionKey("p"), Gt(n, true))} {
			if e.Err() == nil {
				t.Errorf("property name %q accepted: %q", n, e.String())
			}
			if strings.Contains(e.String(), n) {
				t.Errorf("property name %q leaked into %q", n, e.String())
			}
		}
	}
}

func TestTypedLiteralsTokenize(t *testing.T) {
	t.Parallel()
	ts := time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		e    Expr
		kind tokKind
	}{
		{Eq("A", "s"), tokString},
		{Eq("A", true), tokBool},
		{Eq("A", 1), tokInt},
		{Eq("A", -1), tokInt},
		{Eq("A", int64(-1)), tokLong},
		{Eq("A", uint32(1)), tokLong},
		{Eq("A", 1.0), tokDouble},
		{Eq("A", -1e300), tokDouble},
		{Eq("A", 1e-300), tokDouble},
		{Eq("A", float32(1e-30)), tokDouble},
		{Eq("A", ts), tokDateTime},
		{Eq("A", []byte("x")), tokBinary},
		{Eq("A", GUID("00000000-0000-0000-0000-000000000000")), tokGUID},
	}
	for _, tt := range tests {
		toks, err := tokenize(tt.e.String())
		if err != nil {
			t.Errorf("%q: %v", tt.e.String(), err)
			continue
		}
		if len(toks) != 3 || toks[0].kind != tokIdent || toks[1].kind != tokKeyword || toks[2].kind != tt.kind {
			t.Errorf("%q: tokens %v, want ident kw %s", tt.e.String(), toks, tokNames[tt.kind])
		}
	}
}

func TestPrefixEnd(t *testing.T) {
	t.Parallel()
	tests := []struct {
		prefix, end string
		ok          bool
	}{
		{"", "", false},
		{"a", "b", true},
		{"az", "a{", true},
		{"\x7f", "\u0080", true},
		{"\u07ff", "\u0800", true},
		{"\ud7ff", "\ue000", true},
		{"\uffff", "\U00010000", true},
		{"a\U0010FFFF", "b", true},
		{"a\U0010FFFF\U0010FFFF", "b", true},
		{"\U0010FFFF", "", false},
		{"\U0010FFFF\U0010FFFF", "", false},
		{"x\U0001F600", "x\U0001F601", true},
	}
	for _, tt := range tests {
		end, ok := prefixEnd(tt.prefix)
		if end != tt.end || ok != tt.ok {
			t.Errorf("prefixEnd(%q) = %q, %v; want %q, %v", tt.prefix, end, ok, tt.end, tt.ok)
		}
	}
}

func TestZeroExpr(t *testing.T) {
	t.Parallel()
	var e Expr
	if !e.IsZero() || e.String() != "" || e.Err() != nil || e.Comparisons() != 0 {
		t.Errorf("zero Expr: IsZero %v, String %q, Err %v", e.IsZero(), e.String(), e.Err())
	}
	if Eq("A", 1).IsZero() {
		t.Error("a comparison reports IsZero")
	}
	// Building up from the zero value.
	var f Expr
	for _, n := range []string{"Smith", "Jones"} {
		f = Or(f, Eq("LastName", n))
	}
	if want := "(LastName eq 'Smith') or (LastName eq 'Jones')"; f.String() != want {
		t.Errorf("built-up Or = %q, want %q", f.String(), want)
	}
	if Eq("A", 1) != Eq("A", 1) {
		t.Error("equal expressions compare unequal")
	}
}

func TestTermsListEveryComparisonWithItsType(t *testing.T) {
	guid := GUID("C9DA6455-213D-42C9-9A79-3E9149A57833")
	e := And(Point("Sales", "2"), Not(Or(Eq("Age", 30), Gt("Ticks", int64(5)), Lt("Score", 1.5))),
		Eq("Hired", time.Date(2014, 1, 1, 0, 0, 0, 0, time.UTC)), Eq("Photo", []byte{1}), Eq("ID", guid),
		Ne("Active", true), Eq("Dept", dept("x")), Eq("Big", 1e300))
	want := []Term{
		{"PartitionKey", "Edm.String"}, {"RowKey", "Edm.String"},
		{"Age", "Edm.Int32"}, {"Ticks", "Edm.Int64"}, {"Score", "Edm.Double"},
		{"Hired", "Edm.DateTime"}, {"Photo", "Edm.Binary"}, {"ID", "Edm.Guid"},
		{"Active", "Edm.Boolean"}, {"Dept", "Edm.String"}, {"Big", "Edm.Double"},
	}
	if got := e.Terms(); !slices.Equal(got, want) {
		t.Fatalf("Terms() = %v\nwant %v", got, want)
	}
	if len(want) != e.Comparisons() {
		t.Errorf("%d terms, %d comparisons", len(want), e.Comparisons())
	}
	if (Expr{}).Terms() != nil || Eq("bad name", 1).Terms() != nil {
		t.Error("the zero or an invalid Expr has terms")
	}
	// Exprs stay comparable: equal filters built twice are ==.
	if Eq("A", "x") != Eq("A", "x") || Eq("A", "x") == Eq("A", int64(1)) {
		t.Error("Expr equality broke")
	}
}
