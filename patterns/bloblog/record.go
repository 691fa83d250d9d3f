package bloblog

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/tablepatterns/tablepatterns/internal/errs"
)

// Record is one log record: its time and its data, any bytes (a line of text, a JSON
// document...). Records are assigned to blobs by Time, not by the time they are written.
type Record struct {
	Time time.Time
	Data []byte
}

// The line format of a log blob: one record per line,
//
//	2014-07-31T18:00:01.1234567Z<TAB>data<LF>
//
// the time in UTC with exactly 7 fractional digits (100 ns, the service's precision), so
// that lines compare as text in time order, then the data with '\' written as "\\", LF as
// "\n" and CR as "\r". A tab inside the data needs no escape: only the first one separates.
const (
	timeLayout = "2006-01-02T15:04:05.0000000Z"
	timeLen    = len(timeLayout)
)

// minTime and maxTime bound the record times a blob name can express (a 4-digit year).
var (
	minTime = time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC)
	maxTime = time.Date(9999, 12, 31, 23, 59, 59, 999999900, time.UTC)
)

func checkTime(field string, t time.Time) error {
	if t.IsZero() {
		return errs.Invalid(field, "is the zero time")
	}
	if t.Before(minTime) || t.After(maxTime) {
		return errs.Invalid(field, "%s is outside years 1 to 9999", t.UTC().Format(time.RFC3339))
	}
	return nil
}

// appendLine appends r's line to dst.
func appendLine(dst []byte, r Record) []byte {
	dst = r.Time.UTC().AppendFormat(dst, timeLayout)
	dst = append(dst, '\t')
	for _, c := range r.Data {
		switch c {
		case '\\':
			dst = append(dst, '\\', '\\')
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\r':
			dst = append(dst, '\\', 'r')
		default:
			dst = append(dst, c)
		}
	}
	return append(dst, '\n')
}

// parseLine reads one line (without its LF).
func parseLine(line []byte) (Record, error) {
	if len(line) < timeLen+1 || line[timeLen] != '\t' {
		return Record{}, fmt.Errorf("no time and tab at the start of the line")
	}
	t, err := time.Parse(timeLayout, string(line[:timeLen]))
	if err != nil {
		return Record{}, fmt.Errorf("bad time: %w", err)
	}
	if t.Format(timeLayout) != string(line[:timeLen]) {
		// time.Parse is lenient (a comma for the decimal point): accept the canonical form
		// only, so that a line means one thing.
		return Record{}, fmt.Errorf("time %q is not in the form %s", line[:timeLen], timeLayout)
	}
	raw := line[timeLen+1:]
	data := make([]byte, 0, len(raw))
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		if c == '\r' {
			return Record{}, fmt.Errorf("unescaped CR at byte %d", timeLen+1+i)
		}
		if c != '\\' {
			data = append(data, c)
			continue
		}
		if i+1 == len(raw) {
			return Record{}, fmt.Errorf("dangling backslash at the end of the line")
		}
		i++
		switch raw[i] {
		case '\\':
			data = append(data, '\\')
		case 'n':
			data = append(data, '\n')
		case 'r':
			data = append(data, '\r')
		default:
			return Record{}, fmt.Errorf("unknown escape \\%c at byte %d", raw[i], timeLen+i)
		}
	}
	return Record{Time: t, Data: data}, nil
}

// parseBlob reads every record of a log blob's content.
func parseBlob(name string, content []byte) ([]Record, error) {
	return parseBlobRange(name, content, "", "")
}

// parseBlobRange reads the records of a log blob whose time text is in [from, to) ("" for
// an open end). The fixed-width time at the start of each line sorts as the time does, so
// lines outside the range are skipped by comparing text, without decoding them.
func parseBlobRange(name string, content []byte, from, to string) ([]Record, error) {
	var out []Record
	for n := 1; len(content) > 0; n++ {
		i := bytes.IndexByte(content, '\n')
		if i < 0 {
			return out, fmt.Errorf("bloblog: blob %s: line %d is not terminated", name, n)
		}
		line := content[:i]
		content = content[i+1:]
		if len(line) >= timeLen {
			at := string(line[:timeLen])
			if (from != "" && at < from) || (to != "" && at >= to) {
				continue
			}
		}
		r, err := parseLine(line)
		if err != nil {
			return out, fmt.Errorf("bloblog: blob %s: line %d: %w", name, n, err)
		}
		out = append(out, r)
	}
	return out, nil
}

// formatTime and parseTime are the metadata's time format (the line format's).
func formatTime(t time.Time) string { return t.UTC().Format(timeLayout) }

func parseTime(s string) (time.Time, bool) {
	t, err := time.Parse(timeLayout, s)
	return t, err == nil
}

// Blob names: <source>/YYYY/MM/DD/hhmm/NNNNNN.log, as Storage Analytics names its logs
// (the Azure Table storage design guide, log data anti-pattern: "queue/2014/07/31/1800/000001.log").

// MaxSequence is the highest blob number of one period.
const MaxSequence = 999999

// periodDir is the prefix of the blobs of the period starting at start.
func periodDir(source string, start time.Time) string {
	return source + "/" + start.UTC().Format("2006/01/02/1504") + "/"
}

// blobName is the name of blob seq of the period starting at start.
func blobName(source string, start time.Time, seq int) string {
	return fmt.Sprintf("%s%06d.log", periodDir(source, start), seq)
}

// parseSeq returns the number of a blob named by blobName under dir.
func parseSeq(dir, name string) (int, bool) {
	rest, ok := strings.CutPrefix(name, dir)
	if !ok || len(rest) != len("000000.log") || !strings.HasSuffix(rest, ".log") {
		return 0, false
	}
	n, err := strconv.Atoi(rest[:6])
	return n, err == nil && n >= 0
}

// parsePeriodStart returns the period start encoded in a blob name under source.
func parsePeriodStart(source, name string) (time.Time, bool) {
	rest, ok := strings.CutPrefix(name, source+"/")
	if !ok || len(rest) < len("2006/01/02/1504/") {
		return time.Time{}, false
	}
	t, err := time.Parse("2006/01/02/1504", rest[:len("2006/01/02/1504")])
	return t, err == nil
}

// validateSource checks a source name: segments of letters, digits, '-', '_' and '.'
// separated by single '/', at most 200 characters.
func validateSource(source string) error {
	if source == "" || len(source) > 200 {
		return errs.Invalid("source", "must be 1 to 200 characters, got %d", len(source))
	}
	for _, seg := range strings.Split(source, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return errs.Invalid("source", "%q has an empty, \".\" or \"..\" segment", source)
		}
		for i := 0; i < len(seg); i++ {
			c := seg[i]
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
				return errs.Invalid("source", "%q: character %q is not allowed (letters, digits, '-', '_', '.', and '/' between segments)", source, c)
			}
		}
	}
	return nil
}

// validatePeriod checks a period: a whole number of minutes that divides a day.
func validatePeriod(field string, p time.Duration) error {
	if p < time.Minute || p > 24*time.Hour || p%time.Minute != 0 || (24*time.Hour)%p != 0 {
		return errs.Invalid(field, "must be a whole number of minutes that divides 24 hours (1m, 5m, 15m, 1h, ...), got %v", p)
	}
	return nil
}

// periodStart returns the start of the period of length p holding t.
func periodStart(t time.Time, p time.Duration) time.Time {
	t = t.UTC()
	day := time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
	return day.Add(t.Sub(day) / p * p)
}
