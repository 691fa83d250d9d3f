package filter

import (
	"encoding/hex"
	"math"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/tablepatterns/tablepatterns/internal/errs"
)

// GUID is the text form of an Edm.Guid value, 8-4-4-4-12 hexadecimal digits in either case
// (e.g. "c9da6455-213d-42c9-9a79-3e9149a57833"). Convert any GUID type through its text
// form, e.g. filter.GUID(id.String()) for a codec.GUID. The text is checked when the
// comparison is built: a malformed one makes an invalid Expr. It renders in lower case as
// guid'...'.
type GUID string

var guidPattern = regexp.MustCompile(`^[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}$`)

// The Edm.DateTime range the service stores.
var (
	minDateTime = time.Date(1601, 1, 1, 0, 0, 0, 0, time.UTC)
	maxDateTime = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)
)

var timeType = reflect.TypeFor[time.Time]()

// literal renders v as an OData literal. field names the property in errors.
func literal(field string, v any) (string, error) {
	switch x := v.(type) {
	case time.Time:
		return dateTimeLiteral(field, x)
	case GUID:
		if !guidPattern.MatchString(string(x)) {
			return "", errs.Invalid(field, "%.64q is not a GUID (8-4-4-4-12 hex digits)", string(x))
		}
		return "guid'" + strings.ToLower(string(x)) + "'", nil
	case nil:
		return "", errs.Invalid(field, "nil value: nulls are not stored, so there is nothing to compare with")
	}

	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.String:
		return stringLiteral(field, rv.String())
	case reflect.Bool:
		return strconv.FormatBool(rv.Bool()), nil
	case reflect.Int8, reflect.Int16, reflect.Int32:
		return strconv.FormatInt(rv.Int(), 10), nil
	case reflect.Int:
		i := rv.Int()
		if i < math.MinInt32 || i > math.MaxInt32 {
			return "", errs.Invalid(field, "int value %d is out of the Edm.Int32 range; use int64 for an Edm.Int64 property", i)
		}
		return strconv.FormatInt(i, 10), nil
	case reflect.Uint8, reflect.Uint16:
		return strconv.FormatUint(rv.Uint(), 10), nil
	case reflect.Int64:
		return strconv.FormatInt(rv.Int(), 10) + "L", nil
	case reflect.Uint32:
		return strconv.FormatUint(rv.Uint(), 10) + "L", nil
	case reflect.Float32:
		return doubleLiteral(field, rv.Float(), 32)
	case reflect.Float64:
		return doubleLiteral(field, rv.Float(), 64)
	case reflect.Slice:
		if rv.Type().Elem().Kind() == reflect.Uint8 {
			return "X'" + hex.EncodeToString(rv.Bytes()) + "'", nil
		}
	case reflect.Array:
		if rv.Type().Elem().Kind() == reflect.Uint8 && rv.Len() == 16 {
			return "", errs.Invalid(field, "unsupported value type %s: for an Edm.Guid pass filter.GUID(v.String())", rv.Type())
		}
	case reflect.Struct:
		if rv.Type().ConvertibleTo(timeType) {
			return "", errs.Invalid(field, "unsupported value type %s: convert it to time.Time", rv.Type())
		}
	}
	return "", errs.Invalid(field, "unsupported value type %s", rv.Type())
}

// stringLiteral quotes s for OData. Inside quotes only the quote itself is special, and it
// is escaped by doubling; nothing else is escaped here because aztables percent-encodes the
// whole $filter with url.Values.Encode (so '+', '%', '&', '#', control characters and
// non-ASCII reach the service intact). Invalid UTF-8 is refused: percent-encoded raw bytes
// would be decoded by the service into some other string and silently match other data.
func stringLiteral(field, s string) (string, error) {
	if !utf8.ValidString(s) {
		return "", errs.Invalid(field, "string value is not valid UTF-8")
	}
	return "'" + strings.ReplaceAll(s, "'", "''") + "'", nil
}

// doubleLiteral renders f so that the service reads an Edm.Double, never an Edm.Int32:
// there is always a decimal point ("1.0", "1.5E+21"). float32 values use the shortest
// decimal that round-trips at 32 bits, as encoding/json writes them.
func doubleLiteral(field string, f float64, bits int) (string, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return "", errs.Invalid(field, "double value %v cannot be compared in a filter", f)
	}
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		s := strconv.FormatFloat(f, 'E', -1, bits)
		mant, exp, _ := strings.Cut(s, "E")
		if !strings.Contains(mant, ".") {
			mant += ".0"
		}
		return mant + "E" + exp, nil
	}
	s := strconv.FormatFloat(f, 'f', -1, bits)
	if !strings.Contains(s, ".") {
		s += ".0"
	}
	return s, nil
}

// dateTimeLiteral renders t in UTC with the service's 100 ns precision; finer digits are
// truncated, as the service truncates stored values.
func dateTimeLiteral(field string, t time.Time) (string, error) {
	t = t.UTC()
	if t.Before(minDateTime) || !t.Before(maxDateTime) {
		return "", errs.Invalid(field, "DateTime %s is outside the Edm.DateTime range 1601-01-01 to 9999-12-31", t.Format(time.RFC3339))
	}
	return "datetime'" + t.Format("2006-01-02T15:04:05.0000000Z") + "'", nil
}
