package filter

import (
	"bytes"
	"cmp"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/codec/keys"
	"github.com/tablepatterns/tablepatterns/internal/errs"
)

// Condition is one comparison as data: Property Op Value, the value of the EDM Type
// given. It is what a message or a request carries when it chooses which entities a job
// reads, and it is never filter text: Compile builds the comparison with this package's
// constructors, so whoever wrote the Condition chooses a value, never the structure of
// the query. Compiled.Matches re-checks the comparison on each entity read, so that what
// the store matched beyond it (a literal of another type) is never acted on.
type Condition struct {
	// Property is the property name (an identifier; not PartitionKey or RowKey: select
	// keys with key bounds). "Timestamp" is the service's time of the entity's last
	// write: its Type must be Edm.DateTime, and the re-check compares the Timestamp read
	// back (codec.Entity.Timestamp).
	Property string `json:"property"`
	// Op is eq, ne, gt, ge, lt or le.
	Op string `json:"op"`
	// Type is the EDM type of Value: Edm.String (the default, ""), Edm.Int32, Edm.Int64,
	// Edm.Double, Edm.Boolean, Edm.DateTime (RFC 3339) or Edm.Guid. A comparison only
	// matches a property stored with that type (Compiled.Matches). Edm.Int64 conditions
	// are only re-checked, never sent in a query (Compiled.Sent).
	Type string `json:"type,omitempty"`
	// Value is the value as text.
	Value string `json:"value"`
}

// TimestampProperty is the service's own property: the time of an entity's last write.
const TimestampProperty = "Timestamp"

// conditionOps are the comparisons a Condition may name.
var conditionOps = map[string]func(prop string, v any) Expr{
	"eq": Eq, "ne": Ne, "gt": Gt, "ge": Ge, "lt": Lt, "le": Le,
}

// Compiled is a Condition checked and parsed once (Compile): its comparison built and
// its value parsed as its Type, which Matches compares every entity with without
// parsing anything again.
type Compiled struct {
	property, op string
	// want is string, int32, int64, float64, bool, time.Time or codec.GUID.
	want any
	expr Expr
	sent bool
	// timestamp reports that property is the service's Timestamp, which
	// codec.DecodeEntity keeps in Entity.Timestamp, not in Properties.
	timestamp bool
}

// Compile checks the condition, parses its value once and builds its comparison; field
// names it in errors (e.g. "where[2]", giving "where[2].value").
//
// Errors: ErrInvalidInput naming field and the part of the condition (property, op,
// type, value).
func (c Condition) Compile(field string) (Compiled, error) {
	if strings.EqualFold(c.Property, partitionKey) || strings.EqualFold(c.Property, rowKey) {
		return Compiled{}, errs.Invalid(field+".property", "%s: select keys with key bounds, not a condition", c.Property)
	}
	timestamp := c.Property == TimestampProperty
	if timestamp && c.Type != "Edm.DateTime" {
		return Compiled{}, errs.Invalid(field+".type", "%.40q: the Timestamp is compared as Edm.DateTime only", c.Type)
	}
	v, err := c.value(field)
	if err != nil {
		return Compiled{}, err
	}
	op, ok := conditionOps[c.Op]
	if !ok {
		return Compiled{}, errs.Invalid(field+".op", "%.16q is not one of eq, ne, gt, ge, lt, le", c.Op)
	}
	e := op(c.Property, v)
	if err := e.Err(); err != nil {
		return Compiled{}, err
	}
	want := v
	if g, isGUID := v.(GUID); isGUID {
		// The comparison checked the text (8-4-4-4-12 hex digits), which ParseGUID accepts.
		parsed, err := codec.ParseGUID(string(g))
		if err != nil {
			return Compiled{}, errs.Invalid(field+".value", "%.64q is not a value of type %s: %v", c.Value, c.Type, err)
		}
		want = parsed
	}
	return Compiled{property: c.Property, op: c.Op, want: want, expr: e, sent: c.Type != "Edm.Int64", timestamp: timestamp}, nil
}

// value parses Value as Type: string, int32, int64, float64, bool, time.Time or GUID.
func (c Condition) value(field string) (any, error) {
	var v any
	var err error
	switch c.Type {
	case "", "Edm.String":
		v = c.Value
	case "Edm.Int32":
		var n int64
		n, err = strconv.ParseInt(c.Value, 10, 32)
		v = int32(n)
	case "Edm.Int64":
		v, err = strconv.ParseInt(c.Value, 10, 64)
	case "Edm.Double":
		var f float64
		f, err = strconv.ParseFloat(c.Value, 64)
		if err == nil && (math.IsNaN(f) || math.IsInf(f, 0)) {
			err = fmt.Errorf("not a finite number")
		}
		v = f
	case "Edm.Boolean":
		v, err = strconv.ParseBool(c.Value)
	case "Edm.DateTime":
		v, err = time.Parse(time.RFC3339Nano, c.Value)
	case "Edm.Guid":
		v = GUID(c.Value)
	default:
		return nil, errs.Invalid(field+".type", "%.40q is not one of Edm.String, Edm.Int32, Edm.Int64, Edm.Double, Edm.Boolean, Edm.DateTime, Edm.Guid", c.Type)
	}
	if err != nil {
		return nil, errs.Invalid(field+".value", "%.64q is not a value of type %s: %v", c.Value, c.Type, err)
	}
	return v, nil
}

// Expr is the condition's comparison, to send in a query's filter when Sent.
func (c Compiled) Expr() Expr { return c.expr }

// Sent reports whether the comparison goes into a query's filter. Edm.Int64 conditions
// do not: Azurite fails a whole query with 500 when its Int64 literal meets one entity
// whose property holds an Edm.Int32, an Edm.Double or a boolean (package tabletest), and
// a caller cannot know the stored types in advance, so they are only re-checked
// (Matches).
func (c Compiled) Sent() bool { return c.sent }

// Property is the condition's property name.
func (c Compiled) Property() string { return c.property }

// Op is the condition's comparison: eq, ne, gt, ge, lt or le.
func (c Compiled) Op() string { return c.op }

// Type is the EDM type the condition compares with ("Edm.String" for a Condition of
// Type "").
func (c Compiled) Type() string { return EDMType(c.want) }

// IsTimestamp reports a condition on the service's Timestamp (TimestampProperty), which
// every entity has.
func (c Compiled) IsTimestamp() bool { return c.timestamp }

// Matches re-checks the condition on an entity read from storage: the property must be
// stored with the condition's type and compare as the condition says. Strings compare
// by UTF-16 code units, as the service compares them. An ordering of GUIDs (gt, ge, lt,
// le) is left to the service once the type matches; eq and ne compare the 16 bytes. A
// Timestamp condition compares e.Timestamp (absent when the read did not return it). A
// missing property never matches, ne included, as in the service.
func (c Compiled) Matches(e *codec.Entity) bool {
	if c.timestamp {
		want, _ := c.want.(time.Time) // Compile parsed it as Edm.DateTime
		return !e.Timestamp.IsZero() && c.holds(e.Timestamp.Compare(want))
	}
	p, ok := e.Properties[c.property]
	if !ok {
		return false
	}
	var order int
	switch want := c.want.(type) {
	case string:
		got, isString := p.(string)
		ok, order = isString, keys.Compare(got, want)
	case int32:
		ok, order = compareAs(p, want)
	case int64:
		ok, order = compareAs(p, want)
	case float64:
		ok, order = compareAs(p, want)
	case bool:
		got, isBool := p.(bool)
		ok, order = isBool, cmp.Compare(b2i(got), b2i(want))
	case time.Time:
		got, isTime := p.(time.Time)
		ok, order = isTime, got.Compare(want)
	case codec.GUID:
		got, isGUID := p.(codec.GUID)
		if !isGUID {
			return false
		}
		if c.op != "eq" && c.op != "ne" {
			return true
		}
		ok, order = true, bytes.Compare(got[:], want[:])
	default:
		return false
	}
	return ok && c.holds(order)
}

// holds reports whether the condition's comparison holds for order, the stored value
// compared with the condition's (cmp.Compare's sign).
func (c Compiled) holds(order int) bool {
	switch c.op {
	case "eq":
		return order == 0
	case "ne":
		return order != 0
	case "gt":
		return order > 0
	case "ge":
		return order >= 0
	case "lt":
		return order < 0
	case "le":
		return order <= 0
	}
	return false
}

// compareAs compares p with want when p has want's type.
func compareAs[T cmp.Ordered](p any, want T) (bool, int) {
	got, ok := p.(T)
	return ok, cmp.Compare(got, want)
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// EDMType names the EDM type of a property value as codec.DecodeEntity decodes it
// ("Edm.String" for a string, ...), "" for a value of no EDM type.
func EDMType(v any) string {
	switch v.(type) {
	case string:
		return "Edm.String"
	case int32:
		return "Edm.Int32"
	case int64:
		return "Edm.Int64"
	case float64:
		return "Edm.Double"
	case bool:
		return "Edm.Boolean"
	case time.Time:
		return "Edm.DateTime"
	case codec.GUID:
		return "Edm.Guid"
	case []byte:
		return "Edm.Binary"
	}
	return ""
}
