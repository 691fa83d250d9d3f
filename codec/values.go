package codec

import (
	"encoding/base64"
	"errors"
	"math"
	"reflect"
	"strconv"
	"time"
)

// parseInt parses a decimal integer (optional sign) from b without allocating.
func parseInt(b []byte) (n int64, ok, overflow bool) {
	if len(b) == 0 {
		return 0, false, false
	}
	neg := false
	switch b[0] {
	case '-':
		neg = true
		b = b[1:]
	case '+':
		b = b[1:]
	}
	if len(b) == 0 {
		return 0, false, false
	}
	var u uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false, false
		}
		if u > (math.MaxUint64-9)/10 {
			return 0, true, true
		}
		u = u*10 + uint64(c-'0')
	}
	if neg {
		if u > 1<<63 {
			return 0, true, true
		}
		return -int64(u), true, false
	}
	if u > math.MaxInt64 {
		return 0, true, true
	}
	return int64(u), true, false
}

// intValue reads an integer from a JSON number or from a string holding one (Edm.Int64 is
// written as a string); a whole number written with a fraction or exponent is accepted.
func intValue(t *token, buf []byte) (int64, string) {
	var b []byte
	switch t.kind {
	case vNumber:
		b = t.raw
	case vString:
		b = t.text(buf)
	default:
		return 0, "want an integer, found " + t.kindName()
	}
	n, ok, overflow := parseInt(b)
	if overflow {
		return 0, "integer " + string(b) + " overflows int64"
	}
	if ok {
		return n, ""
	}
	f, err := strconv.ParseFloat(bytesView(b), 64)
	if err != nil || t.kind == vString && !isJSONNumber(b) {
		return 0, "want an integer, found " + strconv.Quote(string(b))
	}
	if f != math.Trunc(f) || f < -(1<<63) || f >= 1<<63 {
		return 0, "number " + string(b) + " is not a whole number in the int64 range"
	}
	return int64(f), ""
}

func isJSONNumber(b []byte) bool {
	s := scanner{d: b}
	_, err := s.number()
	return err == nil && s.i == len(b)
}

// fitInt checks that n fits the Go kind k.
func fitInt(n int64, k reflect.Kind) bool {
	switch k {
	case reflect.Int8:
		return n >= math.MinInt8 && n <= math.MaxInt8
	case reflect.Int16:
		return n >= math.MinInt16 && n <= math.MaxInt16
	case reflect.Int32:
		return n >= math.MinInt32 && n <= math.MaxInt32
	case reflect.Uint8:
		return n >= 0 && n <= math.MaxUint8
	case reflect.Uint16:
		return n >= 0 && n <= math.MaxUint16
	case reflect.Uint32:
		return n >= 0 && n <= math.MaxUint32
	case reflect.Int:
		return n >= math.MinInt && n <= math.MaxInt
	}
	return true
}

// floatValue reads an Edm.Double: a JSON number, or "NaN", "Infinity", "-Infinity" (and a
// number) in a string.
func floatValue(t *token, buf []byte, bits int) (float64, string) {
	var b []byte
	switch t.kind {
	case vNumber:
		b = t.raw
	case vString:
		b = t.text(buf)
		switch string(b) {
		case "NaN":
			return math.NaN(), ""
		case "Infinity", "INF":
			return math.Inf(1), ""
		case "-Infinity", "-INF":
			return math.Inf(-1), ""
		}
		if !isJSONNumber(b) {
			return 0, "want a number, found " + strconv.Quote(string(b))
		}
	default:
		return 0, "want a number, found " + t.kindName()
	}
	f, err := strconv.ParseFloat(bytesView(b), bits)
	if err != nil {
		if errors.Is(err, strconv.ErrRange) && math.IsInf(f, 0) {
			return 0, "number " + string(b) + " overflows float" + strconv.Itoa(bits)
		}
		if !errors.Is(err, strconv.ErrRange) {
			return 0, "invalid number " + strconv.Quote(string(b))
		}
	}
	return f, ""
}

// parseDateTime parses an ISO 8601 date-time as the SDKs write it: YYYY-MM-DDTHH:MM:SS,
// 0 to 9 fractional digits (more are truncated), then Z, an offset ±hh:mm, or nothing (UTC).
// The result is in UTC.
func parseDateTime(b []byte) (time.Time, bool) {
	if len(b) < 19 || b[4] != '-' || b[7] != '-' || (b[10] != 'T' && b[10] != 't' && b[10] != ' ') || b[13] != ':' || b[16] != ':' {
		return time.Time{}, false
	}
	num := func(i, n int) (int, bool) {
		v := 0
		for _, c := range b[i : i+n] {
			if c < '0' || c > '9' {
				return 0, false
			}
			v = v*10 + int(c-'0')
		}
		return v, true
	}
	year, ok1 := num(0, 4)
	month, ok2 := num(5, 2)
	day, ok3 := num(8, 2)
	hour, ok4 := num(11, 2)
	minute, ok5 := num(14, 2)
	sec, ok6 := num(17, 2)
	if !(ok1 && ok2 && ok3 && ok4 && ok5 && ok6) || month < 1 || month > 12 || day < 1 ||
		day > daysIn(time.Month(month), year) || hour > 23 || minute > 59 || sec > 59 {
		return time.Time{}, false
	}
	i, nsec := 19, 0
	if i < len(b) && (b[i] == '.' || b[i] == ',') {
		i++
		digits := 0
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			if digits < 9 {
				nsec = nsec*10 + int(b[i]-'0')
			}
			digits++
			i++
		}
		if digits == 0 {
			return time.Time{}, false
		}
		for d := digits; d < 9; d++ {
			nsec *= 10
		}
	}
	offset := 0
	switch {
	case i == len(b):
	case (b[i] == 'Z' || b[i] == 'z') && i+1 == len(b):
	case (b[i] == '+' || b[i] == '-') && len(b)-i == 6 && b[i+3] == ':':
		oh, ok1 := num(i+1, 2)
		om, ok2 := num(i+4, 2)
		if !ok1 || !ok2 || oh > 23 || om > 59 {
			return time.Time{}, false
		}
		offset = (oh*60 + om) * 60
		if b[i] == '-' {
			offset = -offset
		}
	default:
		return time.Time{}, false
	}
	t := time.Date(year, time.Month(month), day, hour, minute, sec, nsec, time.UTC)
	if offset != 0 {
		t = t.Add(-time.Duration(offset) * time.Second)
	}
	return t, true
}

func daysIn(m time.Month, year int) int {
	switch m {
	case time.February:
		if year%4 == 0 && (year%100 != 0 || year%400 == 0) {
			return 29
		}
		return 28
	case time.April, time.June, time.September, time.November:
		return 30
	}
	return 31
}

// binaryValue decodes base64 (standard alphabet, padded or not).
func binaryValue(b []byte) ([]byte, bool) {
	// RawStdEncoding.DecodedLen is never smaller than StdEncoding.DecodedLen.
	out := make([]byte, base64.RawStdEncoding.DecodedLen(len(b)))
	enc := base64.StdEncoding
	if len(b)%4 != 0 {
		enc = base64.RawStdEncoding
	}
	n, err := enc.Decode(out, b)
	if err != nil {
		return nil, false
	}
	return out[:n], true
}

func (t *token) kindName() string {
	switch t.kind {
	case vString:
		return "a string"
	case vNumber:
		return "a number"
	case vTrue, vFalse:
		return "a boolean"
	case vNull:
		return "null"
	}
	return "an object or array"
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
