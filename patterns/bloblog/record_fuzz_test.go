package bloblog

import (
	"bytes"
	"testing"
	"time"
)

func FuzzLineRoundTrip(f *testing.F) {
	f.Add(int64(0), []byte("hello"))
	f.Add(int64(1234567890123), []byte("a\nb\r\\c\td"))
	f.Add(int64(-5), []byte{0, 0xff, '\\', 'n'})
	f.Fuzz(func(t *testing.T, ns int64, data []byte) {
		at := time.Date(2014, 7, 31, 18, 0, 0, 0, time.UTC).Add(time.Duration(ns)).Truncate(100 * time.Nanosecond)
		line := appendLine(nil, Record{Time: at, Data: data})
		if bytes.Count(line, []byte{'\n'}) != 1 || line[len(line)-1] != '\n' {
			t.Fatalf("line %q is not one terminated line", line)
		}
		got, err := parseLine(line[:len(line)-1])
		if err != nil {
			t.Fatalf("parse %q: %v", line, err)
		}
		if !got.Time.Equal(at) || !bytes.Equal(got.Data, data) {
			t.Fatalf("round trip: %v %q -> %v %q", at, data, got.Time, got.Data)
		}
	})
}

func FuzzParseBlob(f *testing.F) {
	f.Add([]byte("2014-07-31T18:00:00.0000000Z\thello\n"))
	f.Add([]byte("2014-07-31T18:00:00.0000000Z\t\\q\n"))
	f.Add([]byte("garbage"))
	f.Fuzz(func(t *testing.T, content []byte) {
		recs, err := parseBlob("x", content)
		if err != nil {
			return
		}
		// What parses re-encodes to the same content.
		var out []byte
		for _, r := range recs {
			out = appendLine(out, r)
		}
		if !bytes.Equal(out, content) {
			t.Fatalf("%q re-encodes to %q", content, out)
		}
	})
}
