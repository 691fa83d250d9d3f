package codec

import (
	"bytes"
	"slices"
	"time"
)

// Entity is a dynamic entity: keys, metadata and a bag of typed properties. It is what
// archivers, wide entities and data series use when the shape is not a Go struct.
//
// Property values are string, bool, int32, int64, float64, time.Time, []byte and GUID
// (EncodeEntity also takes int, written as Edm.Int64). A nil value is absent.
type Entity struct {
	PartitionKey, RowKey string
	// ETag is read from "odata.etag" by DecodeEntity and never written by EncodeEntity.
	ETag string
	// Timestamp is read from "Timestamp" by DecodeEntity and never written (the service
	// owns it).
	Timestamp time.Time
	// Properties maps property names to values. The extra tag lets Entity be used as the
	// type of a codec (For[Entity]) and so of a repo.Table: a table of dynamic entities.
	Properties map[string]any `table:",extra"`
}

// EncodeEntity returns the JSON body for writing e, checking the same limits as
// Codec.Encode. Properties are written in sorted name order. It returns an
// *InvalidInputError for a broken limit, an invalid or reserved property name, or a
// value of an unsupported type.
func EncodeEntity(e *Entity) ([]byte, error) {
	const typeName = "codec.Entity"
	if e == nil {
		return nil, invalid(typeName, "", "nil entity")
	}
	enc := encoder{typeName: typeName}
	pkUnits, err := keyUnits("PartitionKey", e.PartitionKey)
	if err != nil {
		return nil, err
	}
	rkUnits, err := keyUnits("RowKey", e.RowKey)
	if err != nil {
		return nil, err
	}
	enc.size = entityOverhead + 2*(pkUnits+rkUnits)
	dst := make([]byte, 0, 64+48*len(e.Properties))
	dst = append(dst, `{"PartitionKey":`...)
	dst, _, _ = appendString(dst, e.PartitionKey)
	dst = append(dst, `,"RowKey":`...)
	dst, _, _ = appendString(dst, e.RowKey)
	names := make([]string, 0, len(e.Properties))
	for k := range e.Properties {
		names = append(names, k)
	}
	slices.Sort(names)
	for _, name := range names {
		if dst, err = enc.appendDynamic(dst, name, e.Properties[name]); err != nil {
			return nil, err
		}
	}
	if enc.count > MaxProperties {
		return nil, tooLarge(typeName, "(properties)", "too many custom properties", enc.count, MaxProperties)
	}
	if enc.size > MaxEntityBytes {
		return nil, tooLarge(typeName, "(entity)", "entity larger than 1 MiB", enc.size, MaxEntityBytes)
	}
	return append(dst, '}'), nil
}

// DecodeEntity decodes one entity JSON object into an Entity. Properties are typed by
// their "@odata.type" annotations; unannotated ones by their JSON kind: strings stay
// strings, booleans are bool, numbers that are whole and in the int32 range are int32 and
// other numbers float64. odata.* members other than odata.etag are dropped.
//
// It returns a *DecodeError for malformed JSON or a malformed typed value.
func DecodeEntity(data []byte) (*Entity, error) {
	return decodeEntity(data, "")
}

func decodeEntity(data []byte, skip string) (*Entity, error) {
	s := scanner{d: data}
	if err := s.begin(); err != nil {
		return nil, &DecodeError{Offset: err.off, Reason: err.reason}
	}
	e := &Entity{}
	var nameBuf, valBuf [64]byte
	var props, annots []pending
	for first := true; ; first = false {
		nameTok, val, ok, serr := s.next(first)
		if serr != nil {
			return nil, &DecodeError{Offset: serr.off, Reason: serr.reason}
		}
		if !ok {
			break
		}
		name := nameTok.raw
		if nameTok.esc || nameTok.wide {
			name = nameTok.text(nameBuf[:0])
		}
		var dst *string
		switch string(name) {
		case "PartitionKey":
			dst = &e.PartitionKey
		case "RowKey":
			dst = &e.RowKey
		case "odata.etag":
			dst = &e.ETag
		case "Timestamp":
			if val.kind != vNull {
				t, ok := timeValue(&val, valBuf[:0])
				if !ok {
					return nil, &DecodeError{Field: "Timestamp", Property: "Timestamp", Offset: val.off, Reason: "malformed Edm.DateTime"}
				}
				e.Timestamp = t
			}
			continue
		default:
			switch {
			case bytes.HasPrefix(name, []byte("odata.")):
			case bytes.HasSuffix(name, []byte(annotationSuffix)):
				annots = append(annots, pending{name: string(name[:len(name)-len(annotationSuffix)]), tok: val})
			case string(name) != skip:
				props = append(props, pending{name: string(name), tok: val})
			}
			continue
		}
		switch val.kind {
		case vString:
			*dst = val.string()
		case vNull:
		default:
			n := string(name)
			return nil, &DecodeError{Field: n, Property: n, Offset: val.off, Reason: "want a string, found " + val.kindName()}
		}
	}
	e.Properties = make(map[string]any, len(props))
	for i := range props {
		pr := &props[i]
		v, reason := dynamicValue(annotationOf(annots, pr.name), &pr.tok)
		if reason != "" {
			return nil, &DecodeError{Field: pr.name, Property: pr.name, Offset: pr.tok.off, Reason: reason}
		}
		if v != nil {
			e.Properties[pr.name] = v
		}
	}
	return e, nil
}
