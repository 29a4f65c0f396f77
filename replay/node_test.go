package replay

import (
	"context"
	"errors"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"
)

func TestSplitCommand(t *testing.T) {
	for _, c := range []struct {
		in        string
		env, argv []string
		err       string
	}{
		{in: "./brake-node -shm /tmp/sut", argv: []string{"./brake-node", "-shm", "/tmp/sut"}},
		{in: "  EDR_X=17 A_B=c d  ./n  ", env: []string{"EDR_X=17", "A_B=c"}, argv: []string{"d", "./n"}},
		{in: `sh -c 'echo "a b"; exit 3'`, argv: []string{"sh", "-c", `echo "a b"; exit 3`}},
		{in: `x "a \"q\" \\ \n" b\ c ''`, argv: []string{"x", `a "q" \ \n`, "b c", ""}},
		{in: "X=1 ./n x=2", env: []string{"X=1"}, argv: []string{"./n", "x=2"}},
		{in: "'unterminated", err: "unterminated ' quote"},
		{in: "X=1", err: "no program to run"},
		{in: "   ", err: "no program to run"},
	} {
		env, argv, err := SplitCommand(c.in)
		if c.err != "" {
			if !errors.Is(err, ErrOptions) || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%q: %v, want %q", c.in, err, c.err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(env, c.env) || !reflect.DeepEqual(argv, c.argv) {
			t.Errorf("%q: env %q argv %q %v; want %q %q", c.in, env, argv, err, c.env, c.argv)
		}
	}
}

// TestNodeOutputBounded: what is kept of a node's output is bounded
// whatever it prints: lines cut at nodeLineBytes, the last nodeTailLines
// of stderr; the node is stopped and nothing of it is left running.
func TestNodeOutputBounded(t *testing.T) {
	n, err := launchNode(context.Background(), NodeOptions{
		Command: `sh -c 'head -c 3000000 /dev/zero | tr "\0" x >&2; echo >&2; i=0; while [ $i -lt 50 ]; do echo line $i >&2; i=$((i+1)); done; echo ready; exec sleep 30'`,
		Ready:   []Ready{{Line: regexpMust(t, "^ready$")}}, ReadyTimeout: 20 * time.Second, Grace: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	rep := n.stop()
	if len(rep.Stderr) != nodeTailLines || rep.Stderr[nodeTailLines-1] != "line 49" {
		t.Errorf("tail %q", rep.Stderr)
	}
	if rep.Exit != "stopped by SIGTERM: signal: terminated" || rep.Exited || GroupRunning(rep.PID) {
		t.Errorf("%+v", rep)
	}
	n, err = launchNode(context.Background(), NodeOptions{
		Command: `sh -c 'head -c 3000000 /dev/zero | tr "\0" x >&2; echo >&2; exit 4'`,
		Ready:   []Ready{{Line: regexpMust(t, "never")}}, ReadyTimeout: 20 * time.Second})
	if !errors.Is(err, ErrNode) || !strings.Contains(err.Error(), "exited before it was ready (exit status 4)") {
		t.Fatalf("%v", err)
	}
	if rep := n.exited(0); len(rep.Stderr) != 1 || len(rep.Stderr[0]) != nodeLineBytes {
		t.Errorf("a 3 MB line is kept as %d lines of %d bytes", len(rep.Stderr), len(rep.Stderr[0]))
	}
}

func regexpMust(t *testing.T, s string) *regexp.Regexp {
	t.Helper()
	re, err := regexp.Compile(s)
	if err != nil {
		t.Fatal(err)
	}
	return re
}
