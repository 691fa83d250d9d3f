package codec

// PropertyInfo describes one stored property of an entity type, for checks made before a
// query is sent (repo checks filter property names and value types with it).
type PropertyInfo struct {
	// Name is the stored property name.
	Name string
	// GoName is the Go field name ("" for Timestamp when T does not map it).
	GoName string
	// Type is the EDM type the property is stored with: "Edm.String", "Edm.Boolean",
	// "Edm.Int32", "Edm.Int64", "Edm.Double", "Edm.DateTime", "Edm.Binary" or "Edm.Guid".
	// Text, JSON and encoding.TextMarshaler fields are Edm.String.
	Type string
	// Encrypted reports a field with the encrypt option: it is stored as ciphertext
	// (Edm.Binary), so no plaintext comparison in a filter can match it.
	Encrypted bool
}

// edm returns the EDM type name of a storage kind.
func (k fkind) edm() string {
	switch k {
	case fString, fText, fJSON:
		return "Edm.String"
	case fBool:
		return "Edm.Boolean"
	case fInt32:
		return "Edm.Int32"
	case fInt64:
		return "Edm.Int64"
	case fDouble:
		return "Edm.Double"
	case fTime:
		return "Edm.DateTime"
	case fBinary:
		return "Edm.Binary"
	case fGUID:
		return "Edm.Guid"
	}
	return ""
}

// Property returns the description of T's stored property name (a stored name, not a Go
// field name; see PropertyName). PartitionKey and RowKey (Edm.String) and Timestamp
// (Edm.DateTime) are known for every T: every entity has them. ok is false for any other
// name T does not map, even when T has an extra field (see OpenSchema).
func (c *Codec[T]) Property(name string) (PropertyInfo, bool) {
	p := c.p
	if f, ok := p.byName[name]; ok {
		return PropertyInfo{Name: f.name, GoName: f.goName, Type: f.kind.edm(), Encrypted: f.encrypt}, true
	}
	switch name {
	case "PartitionKey", "RowKey":
		return PropertyInfo{Name: name, GoName: p.goNameOf(name), Type: "Edm.String"}, true
	case "Timestamp":
		return PropertyInfo{Name: name, GoName: p.goNameOf(name), Type: "Edm.DateTime"}, true
	}
	return PropertyInfo{}, false
}

// goNameOf returns the Go field name mapped to a system property, or "".
func (p *plan) goNameOf(prop string) string {
	for g, n := range p.byGo {
		if n == prop {
			return g
		}
	}
	return ""
}

// Properties returns the stored names of T's properties, in field order, without the
// system properties.
func (c *Codec[T]) Properties() []string {
	out := make([]string, len(c.p.fields))
	for i, f := range c.p.fields {
		out[i] = f.name
	}
	return out
}

// OpenSchema reports whether T has an extra field (map[string]any with the extra option):
// its entities may then hold properties of any name and type beyond T's fields, so a
// filter on an unknown name is legitimate (codec.Entity is such a type).
func (c *Codec[T]) OpenSchema() bool { return c.p.extra != nil }
