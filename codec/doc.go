// Package codec maps Go structs to Azure Table storage entities and back, in the JSON
// format of the Table service (the body of insert, update, merge and upsert; what
// GetEntity and ListEntities return), and checks every service limit before a request is
// sent.
//
// It is the typed layer over aztables, which takes and returns entities as JSON bytes.
// It does not use aztables.EDMEntity: that type doubles single quotes in keys, does not
// convert times to UTC and loses Int64 annotations. The JSON is written by appending to a
// []byte with per-field encoders and pre-escaped property names, and read by a small
// scanner dispatching on a precomputed name-to-field map; the plan of a type is built once
// by reflection and cached.
//
// # Use
//
//	c, err := codec.For[Employee]()    // once; fails if Employee cannot be mapped
//	body, err := c.Encode(&e)          // for AddEntity / UpdateEntity / UpsertEntity
//	err = c.Decode(resp.Value, &e)     // from GetEntity or a ListEntities page
//
// Entity is the dynamic form (a property bag) with EncodeEntity and DecodeEntity; Registry
// decodes several entity types stored in one table (seeds/004, "work with heterogeneous
// entity types").
//
// # Tags
//
// The tag key is "table", with the grammar of encoding/json:
//
//	table:"Name,opt,opt"    store the field as property Name (default: the Go field name)
//	table:"-"               never store the field
//
// Options:
//
//	pk          the PartitionKey field (string or a named string type)
//	rk          the RowKey field (string or a named string type)
//	etag        the ETag field (string): set from "odata.etag" by Decode, never written
//	timestamp   the Timestamp field (time.Time): set by Decode, never written
//	omitempty   leave the property out when the value is zero (or empty)
//	json        store any value (struct, slice, map, ...) JSON-encoded in an Edm.String
//	extra       a map[string]any field that captures, on Decode, the properties no field
//	            maps (typed as DecodeEntity types them) and writes them back on Encode, so
//	            that a Replace does not drop properties another application wrote
//
// Without tags, fields named PartitionKey and RowKey (string), ETag (string) and
// Timestamp (time.Time) are recognised by name. Unexported fields are ignored. Embedded
// structs (and pointers to exported structs) without a tag name are flattened as
// encoding/json does; a nil embedded pointer means its properties are absent, and Decode
// allocates it. Two fields with one property name, or one Go field name, are a schema
// error (For fails) rather than silently shadowing each other.
//
// # Type mapping
//
//	string                          Edm.String
//	bool                            Edm.Boolean
//	int8, int16, int32, uint8, uint16   Edm.Int32 (a JSON number)
//	int, int64, uint32              Edm.Int64 (a JSON string, annotated)
//	float32, float64                Edm.Double (annotated always, so that whole numbers stay
//	                                doubles; NaN and ±Inf as "NaN", "Infinity", "-Infinity")
//	time.Time                       Edm.DateTime (UTC, 7 fractional digits: 100 ns ticks)
//	[]byte                          Edm.Binary (base64); a nil slice is absent
//	GUID                            Edm.Guid
//	encoding.TextMarshaler          Edm.String (the type's pointer must also implement
//	                                encoding.TextUnmarshaler); GUID and time.Time excepted
//	*T of any of these              optional: a nil pointer is absent (the service stores
//	                                no nulls) and an absent property decodes to nil
//
// Named types of these kinds map like their underlying type. uint, uint64 and uintptr are
// refused (they do not fit Edm.Int64), as are chan, func, complex, unsafe.Pointer,
// interfaces, and structs, maps, arrays and non-byte slices without the json option.
//
// The zero time.Time (year 1) is outside the Edm.DateTime range: it is left out with
// omitempty, and refused otherwise (use omitempty or *time.Time for "no time"). Times are
// converted to UTC; nanoseconds below 100 ns are truncated.
//
// Decode reads by the destination field's type and accepts what the other official SDKs
// and the service write: Int64 as an annotated string or a bare number; Int32 as a number
// (a whole number written with a fraction, "34.0", too); Double as a number, as "NaN",
// "Infinity", "-Infinity", or as a bare whole number without annotation (the JavaScript
// SDK); DateTime with 0 to 7 (up to 9) fractional digits, "Z", an offset or no zone, with
// or without annotation; Binary in base64 padded or not; Guid in either case, with or
// without braces. A value that does not fit its field (200 into an int8, a fraction into an
// int) is a *DecodeError naming the field. A null is treated as absent.
//
// # Limits
//
// Encode, EncodeProperties, EncodeEntity and Registry.Encode check, and refuse with an
// *InvalidInputError (errors.Is ErrInvalidInput) naming the type, the field, the size and
// the limit:
//
//   - PartitionKey and RowKey: valid UTF-8, at most MaxKeyBytes (1 KiB) measured in UTF-16
//     bytes, as the service stores strings — so at most 512 characters of the BMP. The
//     service documents "1 KiB" without a unit; measuring UTF-16 is the conservative
//     reading: every key accepted here is accepted by the service. No / \ # ?, no
//     U+0000–U+001F, no U+007F–U+009F. The empty string is a valid key.
//   - Property names: a letter or '_' first, then letters, digits, '_' (C# identifiers),
//     at most 255 UTF-16 code units; PartitionKey, RowKey and Timestamp are reserved.
//   - At most MaxProperties (252) custom properties present in the entity.
//   - Edm.String: valid UTF-8, at most 64 KiB of UTF-16 (2 bytes per code unit, 4 for a
//     character outside the BMP) — about 32 K characters. Edm.Binary: at most 64 KiB.
//   - Edm.DateTime: 1601-01-01T00:00:00Z to 9999-12-31T23:59:59.9999999Z.
//   - Entity size: at most MaxEntityBytes (1 MiB), measured with the service's published
//     formula: 4 + 2 × len16(PartitionKey + RowKey) + Σ over properties of (8 + 2 ×
//     len16(name) + value size), where the value size is 2 × len16 + 4 for a string, n + 4
//     for binary, 1 for a boolean, 4 for Int32, 8 for Int64, Double and DateTime, 16 for
//     a Guid. This measures the stored entity, not the JSON body (whose escaping and base64
//     make it larger).
//
// ValidateKey, ValidateTableName and ValidatePropertyName expose the same checks for
// requests that carry no entity (get, delete, create table).
//
// # Errors
//
// Refusals of input are *InvalidInputError, the SDK-wide type; Decode failures are
// *DecodeError; Registry.Decode of an unregistered type is *UnknownEntityTypeError
// (errors.Is ErrUnknownEntityType). Nothing in this package panics on user input.
package codec
