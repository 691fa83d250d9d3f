package app_test

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/tablepatterns/tablepatterns/internal/testenv"
	"github.com/tablepatterns/tablepatterns/queueworker/cmd/archiver/app"
)

// run -drain exits ExitPoisoned when a job it ran went to the poison queue, so that a
// script or a CI step that drains the queue sees the failure.
func TestDrainExitsPoisonedWhenJobsWentToPoison(t *testing.T) {
	t.Parallel()
	queue := testenv.QueueName(t)
	// A job outside the allowlist is poisoned at its first delivery.
	if code, out, stderr := archiver(t, "enqueue", "archive-entity", "-queue", queue, "-source", "Outside", "-pk", "p", "-rk", "r", "-target-table", "OutsideArchive"); code != 0 {
		t.Fatalf("enqueue: %d\n%s\n%s", code, out, stderr)
	}
	code, out, stderr := archiver(t, "run", "-drain", "-queue", queue, "-allow-tables", "Inside", "-allow-containers", "inside")
	if code != app.ExitPoisoned || !strings.Contains(out, "poisoned 1") {
		t.Fatalf("run -drain with a poisoned job: exit %d, want %d\n%s\n%s", code, app.ExitPoisoned, out, stderr)
	}
	// Nothing left to run: a clean drain exits 0.
	if code, out, stderr := archiver(t, "run", "-drain", "-queue", queue, "-allow-tables", "Inside", "-allow-containers", "inside"); code != app.ExitOK {
		t.Fatalf("run -drain of an empty queue: exit %d\n%s\n%s", code, out, stderr)
	}
}

// enqueue archive-entity requires -rk: the empty RowKey, a valid key, is -rk ”.
func TestEnqueueArchiveEntityRequiresRowKeyFlag(t *testing.T) {
	t.Parallel()
	queue := testenv.QueueName(t)
	code, _, stderr := archiver(t, "enqueue", "archive-entity", "-queue", queue, "-source", "Current", "-pk", "p", "-target-table", "Archive")
	if code != app.ExitUsage || !strings.Contains(stderr, "-rk") {
		t.Fatalf("archive-entity without -rk: exit %d, want %d naming -rk\n%s", code, app.ExitUsage, stderr)
	}
	code, out, stderr := archiver(t, "enqueue", "archive-entity", "-queue", queue, "-source", "Current", "-pk", "p", "-rk", "", "-target-table", "Archive")
	if code != app.ExitOK || !strings.Contains(out, "enqueued archive-entity") {
		t.Fatalf("archive-entity -rk '': exit %d\n%s\n%s", code, out, stderr)
	}
}

// An unknown job names every job enqueue takes.
func TestUnknownJobNamesEveryJob(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"enqueue", "nothing"}, {"enqueue"}} {
		code, _, stderr := archiver(t, args...)
		if code != app.ExitUsage {
			t.Errorf("%q: exit %d", args, code)
		}
		for _, kind := range []string{"archive-entity", "archive-table", "restore-table", "archive-range", "archive-periods"} {
			if !strings.Contains(stderr, kind) {
				t.Errorf("%q: the message omits %s: %s", args, kind, stderr)
			}
		}
	}
}

// exitCodeLine is one row of an exit-code list: a code and what it means.
var exitCodeLine = regexp.MustCompile(`^\s*\|?\s*` + "`?" + `(\d)` + "`?" + `\s*\|?\s+(.+?)\s*\|?\s*$`)

// exitCodes reads the rows of the first exit-code list after the line that holds heading.
func exitCodes(t *testing.T, text, heading, where string) map[string]string {
	t.Helper()
	_, rest, ok := strings.Cut(text, heading)
	if !ok {
		t.Fatalf("%s has no %q", where, heading)
	}
	codes := map[string]string{}
	started := false
	for _, line := range strings.Split(rest, "\n")[1:] {
		m := exitCodeLine.FindStringSubmatch(line)
		if m == nil {
			if started && strings.TrimSpace(line) != "" && !strings.HasPrefix(strings.TrimSpace(line), "|--") && !strings.HasPrefix(strings.TrimSpace(line), "| code") {
				break
			}
			continue
		}
		started = true
		codes[m[1]] = strings.Join(strings.Fields(m[2]), " ")
	}
	return codes
}

// README's "Exit codes" section, the help text and the binary's constants name the same
// codes with the same meanings.
func TestExitCodesAgreeWithREADMEAndHelp(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("../../../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	fromREADME := exitCodes(t, string(readme), "### Exit codes", "README.md")
	fromHelp := exitCodes(t, app.Usage(), "Exit codes:", "the help")
	want := map[int]bool{app.ExitOK: true, app.ExitFailed: true, app.ExitUsage: true, app.ExitPoisoned: true}
	if len(fromHelp) != len(want) {
		t.Errorf("the help lists %v, want the codes %v", fromHelp, want)
	}
	for code := range want {
		c := string(rune('0' + code))
		if fromHelp[c] == "" {
			t.Errorf("the help does not list exit code %s", c)
		}
		if fromREADME[c] != fromHelp[c] {
			t.Errorf("exit code %s: README says %q, the help says %q", c, fromREADME[c], fromHelp[c])
		}
	}
	if len(fromREADME) != len(fromHelp) {
		t.Errorf("README lists %v, the help %v", fromREADME, fromHelp)
	}
	// The command's doc comment (go doc) lists them too.
	main, err := os.ReadFile("../main.go")
	if err != nil {
		t.Fatal(err)
	}
	fromDoc := exitCodes(t, strings.ReplaceAll(string(main), "\n//", "\n"), "Exit codes:", "main.go")
	if len(fromDoc) != len(fromHelp) {
		t.Errorf("main.go lists %v, the help %v", fromDoc, fromHelp)
	}
	for c, meaning := range fromHelp {
		if fromDoc[c] != meaning {
			t.Errorf("exit code %s: main.go says %q, the help says %q", c, fromDoc[c], meaning)
		}
	}
}
