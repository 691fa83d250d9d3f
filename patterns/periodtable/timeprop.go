package periodtable

import (
	"reflect"
	"time"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/internal/errs"
)

// timeOf reads v's time property through the codec, so that the routing sees exactly the
// value that is stored.
func (p *Tables[T]) timeOf(v *T) (time.Time, error) {
	if v == nil {
		return time.Time{}, errs.Invalid("entity", "is nil")
	}
	if p.timeIndex != nil {
		f, err := reflect.ValueOf(v).Elem().FieldByIndexErr(p.timeIndex)
		if err == nil {
			switch at := f.Interface().(type) {
			case time.Time:
				return at, nil
			case *time.Time:
				if at != nil {
					return *at, nil
				}
			}
		}
		return time.Time{}, errs.Invalid(p.timeProp, "must hold a time.Time to route the entity to its period")
	}
	body, err := p.codec.EncodeProperties(v, p.timeProp)
	if err != nil {
		return time.Time{}, err
	}
	e, err := codec.DecodeEntity(body)
	if err != nil {
		return time.Time{}, err
	}
	at, ok := e.Properties[p.timeProp].(time.Time)
	if !ok {
		return time.Time{}, errs.Invalid(p.timeProp, "must hold a time.Time to route the entity to its period (got %T)", e.Properties[p.timeProp])
	}
	return at, nil
}
