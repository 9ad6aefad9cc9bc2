package main

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mpsurf/mpsurf/native-host/protocol"
	"github.com/mpsurf/mpsurf/native-host/wire"
)

// bin is the real mpsurf-host, built once for this package's tests.
var bin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "mpsurf-host-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bin = filepath.Join(dir, "mpsurf-host")
	build := exec.Command("go", "build", "-trimpath", "-o", bin, ".")
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building mpsurf-host:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

const origin = protocol.ExtensionOrigin

// hostEnv is a clean environment: no policy or log settings leak in from the caller's.
func hostEnv(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "MPSURF_") {
			env = append(env, kv)
		}
	}
	// The decision log of a test host goes next to its binary, never into the real user's data directory;
	// path measurement is off so each host process starts and answers at once.
	env = append(env, "MPSURF_DB="+filepath.Join(filepath.Dir(bin), "test.db"), "MPSURF_NO_MEASURE=1")
	return append(env, extra...)
}

type result struct {
	stdout, stderr []byte
	code           int
	maxRSSKiB      int64
}

// runHost runs the binary to completion with stdin, killing it after 10 s so that a hang fails the test instead of
// the whole run.
func runHost(t *testing.T, stdin []byte, env []string, args ...string) result {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Stdin = bytes.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	cmd.Env = env
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	timer := time.AfterFunc(10*time.Second, func() { cmd.Process.Kill() })
	defer timer.Stop()
	err := cmd.Wait()
	ws := cmd.ProcessState.Sys().(syscall.WaitStatus)
	if ws.Signaled() {
		t.Fatalf("%v died of %v (err %v); stderr:\n%s", args, ws.Signal(), err, errb.Bytes())
	}
	return result{out.Bytes(), errb.Bytes(), ws.ExitStatus(), cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss}
}

func replyCodes(t *testing.T, out []byte) []int {
	t.Helper()
	codes := []int{}
	r := wire.NewReader(bytes.NewReader(out), wire.MaxOut)
	for {
		p, err := r.Read()
		if err == io.EOF {
			return codes
		}
		if err != nil {
			t.Fatalf("stdout is not whole frames: %v", err)
		}
		var reply struct {
			OK    bool            `json:"ok"`
			Error *protocol.Error `json:"error"`
		}
		if err := json.Unmarshal(p, &reply); err != nil {
			t.Fatalf("frame %q: %v", p, err)
		}
		if reply.OK {
			codes = append(codes, 0)
		} else {
			codes = append(codes, int(reply.Error.Code))
		}
	}
}

// bad_input.json against the built binary: the replies in order, exit 0, no crash, and memory that stays small
// even when told a frame is 4 GiB long.
func TestBadInputBinary(t *testing.T) {
	data, err := os.ReadFile("../../vectors/bad_input.json")
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Cases []struct {
			Name     string `json:"name"`
			InputHex string `json:"input_hex"`
			Replies  []int  `json:"replies"`
		} `json:"cases"`
	}
	if err := json.Unmarshal(data, &file); err != nil {
		t.Fatal(err)
	}
	// Linux may count into the child's ru_maxrss the memory of the test process it was forked from, so this is an
	// upper bound on the host's own; either way a 4 GiB allocation would blow through it.
	const maxRSSKiB = 64 << 10
	for _, c := range file.Cases {
		t.Run(c.Name, func(t *testing.T) {
			in, err := hex.DecodeString(c.InputHex)
			if err != nil {
				t.Fatal(err)
			}
			r := runHost(t, in, hostEnv(), origin)
			if r.code != 0 {
				t.Errorf("exit status %d, want 0; stderr:\n%s", r.code, r.stderr)
			}
			if got := replyCodes(t, r.stdout); !reflect.DeepEqual(got, c.Replies) {
				t.Errorf("replies %v, want %v", got, c.Replies)
			}
			if r.maxRSSKiB > maxRSSKiB {
				t.Errorf("max RSS %d KiB, want < %d KiB", r.maxRSSKiB, maxRSSKiB)
			}
			if strings.Contains(c.Name, "truncated") && !strings.Contains(string(r.stderr), "truncated frame") {
				t.Errorf("no 'truncated frame' in the log:\n%s", r.stderr)
			}
			t.Logf("max RSS %d KiB", r.maxRSSKiB)
		})
	}
}

// The caller check as a started binary, on the shared vectors (native-host/vectors/callers.json): every refused
// start exits 3 with one line on stderr and nothing on stdout; every admitted start without flags of its own serves,
// Chromium's and Firefox's alike.
func TestCallerVectors(t *testing.T) {
	data, err := os.ReadFile("../../vectors/callers.json")
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		Cases []struct {
			Name    string
			Argv    []string
			Result  string
			Browser string
			Rest    []string
		}
	}
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatal(err)
	}
	in := wire.Append(nil, []byte(`{"v":1,"id":1,"type":"status"}`))
	served := map[string]bool{}
	for _, c := range v.Cases {
		switch {
		case c.Result == "refuse":
			r := runHost(t, in, hostEnv(), c.Argv...)
			if r.code != 3 || len(r.stdout) != 0 {
				t.Errorf("%s: exit %d, %d bytes on stdout; want exit 3 and none", c.Name, r.code, len(r.stdout))
			}
			if lines := strings.Split(strings.TrimSpace(string(r.stderr)), "\n"); len(lines) != 1 || !strings.Contains(lines[0], "refusing") {
				t.Errorf("%s: stderr %q, want one line", c.Name, r.stderr)
			}
		case c.Result == "accept" && len(c.Rest) == 0:
			r := runHost(t, in, hostEnv(), c.Argv...)
			var reply struct {
				OK   bool   `json:"ok"`
				Type string `json:"type"`
			}
			p, err := wire.NewReader(bytes.NewReader(r.stdout), wire.MaxOut).Read()
			if err == nil {
				err = json.Unmarshal(p, &reply)
			}
			if r.code != 0 || err != nil || !reply.OK || reply.Type != "status" {
				t.Errorf("%s: exit %d, reply %s (%v); stderr %s", c.Name, r.code, p, err, r.stderr)
			}
			served[c.Browser] = true
		}
	}
	if !served["chromium"] || !served["firefox"] {
		t.Errorf("the vectors served %v: want a Chromium and a Firefox start", served)
	}
}

func TestUsage(t *testing.T) {
	tests := []struct {
		args []string
		code int
		out  string // in stdout or stderr
	}{
		{nil, 2, "usage:"},
		{[]string{"bogus"}, 2, `unknown command "bogus"`},
		{[]string{"help"}, 0, "usage:"},
		{[]string{"version"}, 0, "mpsurf-host 0.1.0 (protocol 1)"},
		{[]string{"install", "--browser"}, 2, "flag needs an argument: -browser"},
		{[]string{"install", "--browser", "safari"}, 1, "chromium, chrome or firefox"},
		{[]string{"install", "--browser", "firefox", "--user-data-dir", "/tmp/x"}, 1, "not per profile"},
		{[]string{"install", "--root", "stage"}, 2, "--root is for --system"},
		{[]string{"uninstall", "extra"}, 2, "unexpected argument"},
		{[]string{"status", "--nope"}, 2, "flag provided but not defined: -nope"},
		{[]string{"unframe", "x"}, 2, `unexpected argument "x"`},
		{[]string{origin, "--nope"}, 2, "flag provided but not defined: -nope"},
		{[]string{origin, "--models", "a", "--policy", "b"}, 1, "give one"},
	}
	for _, tc := range tests {
		r := runHost(t, nil, hostEnv("HOME="+t.TempDir()), tc.args...)
		if r.code != tc.code || !strings.Contains(string(r.stdout)+string(r.stderr), tc.out) {
			t.Errorf("%q: exit %d, output %q; want %d and %q", tc.args, r.code, string(r.stdout)+string(r.stderr), tc.code, tc.out)
		}
	}
}

// frame reproduces the vector frames exactly, and unframe reads them back.
func TestFrameUnframeVectors(t *testing.T) {
	data, err := os.ReadFile("../../vectors/frames.json")
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Frames []struct{ Name, JSON, Hex string }
	}
	if err := json.Unmarshal(data, &file); err != nil {
		t.Fatal(err)
	}
	var all []byte
	var lines []string
	for _, f := range file.Frames {
		r := runHost(t, nil, hostEnv(), "frame", f.JSON)
		if r.code != 0 || hex.EncodeToString(r.stdout) != f.Hex {
			t.Errorf("%s: frame gave %x (exit %d, %s)", f.Name, r.stdout, r.code, r.stderr)
		}
		raw, _ := hex.DecodeString(f.Hex)
		all = append(all, raw...)
		lines = append(lines, f.JSON)
	}
	r := runHost(t, all, hostEnv(), "unframe")
	if r.code != 0 || string(r.stdout) != strings.Join(lines, "\n")+"\n" {
		t.Errorf("unframe: exit %d\n%s", r.code, r.stdout)
	}
	// Lines on stdin: one frame each.
	r = runHost(t, []byte(lines[0]+"\n\n"+lines[1]+"\n"), hostEnv(), "frame")
	if want, _ := hex.DecodeString(file.Frames[0].Hex + file.Frames[1].Hex); !bytes.Equal(r.stdout, want) {
		t.Errorf("frame from stdin: %x", r.stdout)
	}
	if r := runHost(t, nil, hostEnv(), "frame", "{nope"); r.code != 1 || len(r.stdout) != 0 {
		t.Errorf("invalid JSON framed: exit %d", r.code)
	}
	if r := runHost(t, nil, hostEnv(), "frame", "--raw", "nope"); r.code != 0 || hex.EncodeToString(r.stdout) != "040000006e6f7065" {
		t.Errorf("--raw: %x, exit %d", r.stdout, r.code)
	}
	if r := runHost(t, []byte{5, 0, 0, 0, '{'}, hostEnv(), "unframe"); r.code != 1 || !strings.Contains(string(r.stderr), "truncated") {
		t.Errorf("unframe of a truncated frame: exit %d, %s", r.code, r.stderr)
	}
}

// The documented smoke test, as a real pipeline of three processes.
func TestSmokePipeline(t *testing.T) {
	script := fmt.Sprintf(`set -o pipefail; %[1]s frame '{"v":1,"id":1,"type":"decide","body":{"origin":"https://Example.COM:443","tab":4,"nav":"4-2"}}' | %[1]s %[2]s | %[1]s unframe`, bin, origin)
	cmd := exec.Command("bash", "-c", script)
	cmd.Env = hostEnv()
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	var reply map[string]any
	if err := json.Unmarshal(out, &reply); err != nil {
		t.Fatalf("%q: %v", out, err)
	}
	body, _ := reply["body"].(map[string]any)
	if reply["ok"] != true || body["origin"] != "https://example.com" || body["nav"] != "4-2" {
		t.Errorf("reply %v", reply)
	}
}

func TestStatusCommand(t *testing.T) {
	r := runHost(t, nil, hostEnv(), "status", "--json")
	var out map[string]any
	if err := json.Unmarshal(r.stdout, &out); err != nil || r.code != 0 {
		t.Fatalf("exit %d, %q: %v", r.code, r.stdout, err)
	}
	want := map[string]any{"host": "mpsurf-host", "version": "0.1.0", "protocol": 1.0,
		"policy_source": "embedded:policy-models/baseline.json"}
	for k, v := range want {
		if out[k] != v {
			t.Errorf("%s: %v, want %v", k, out[k], v)
		}
	}
	if p, _ := out["policy"].(map[string]any); p["theta1"] != 200000.0 || p["revision"] != 1.0 {
		t.Errorf("policy %v", out["policy"])
	}

	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "baseline.json"), []byte(`{"id":"x","version":1,"multipath":true,"theta1_bytes":-1}`), 0o644)
	r = runHost(t, nil, hostEnv("MPSURF_MODELS="+dir), "status", "--json")
	out = nil
	json.Unmarshal(r.stdout, &out)
	wantErr := filepath.Join(dir, "baseline.json") + ": theta1_bytes: must be 0 to 9007199254740991"
	if r.code != 1 || out["policy_error"] != wantErr || out["policy"] != nil {
		t.Errorf("corrupt policy: exit %d, %v", r.code, out)
	}
	r = runHost(t, nil, hostEnv(), "status", "--policy", "../../../policy-models/baseline.json")
	if r.code != 0 || !strings.Contains(string(r.stdout), "baseline-seed001 v1") {
		t.Errorf("text status: exit %d\n%s", r.code, r.stdout)
	}
}

func TestInstallCommand(t *testing.T) {
	profile, home := t.TempDir(), t.TempDir()
	env := hostEnv("HOME=" + home)
	file := filepath.Join(profile, "NativeMessagingHosts", "org.mpsurf.host.json")
	r := runHost(t, nil, env, "install", "--user-data-dir", profile)
	if r.code != 0 || !strings.Contains(string(r.stdout), file) {
		t.Fatalf("install: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	var m map[string]any
	data, _ := os.ReadFile(file)
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	if m["path"] != bin || m["type"] != "stdio" || !reflect.DeepEqual(m["allowed_origins"], []any{origin}) {
		t.Errorf("manifest %v, want path %s", m, bin)
	}
	// --browser chrome under $HOME.
	r = runHost(t, nil, env, "install", "--browser", "chrome", "--path", bin)
	if _, err := os.Stat(filepath.Join(home, ".config/google-chrome/NativeMessagingHosts/org.mpsurf.host.json")); r.code != 0 || err != nil {
		t.Errorf("chrome install: exit %d, %v", r.code, err)
	}
	for i, want := range []string{"removed " + file, "nothing to remove"} {
		r = runHost(t, nil, env, "uninstall", "--user-data-dir", profile)
		if r.code != 0 || !strings.Contains(string(r.stdout), want) {
			t.Errorf("uninstall %d: exit %d, %q", i+1, r.code, r.stdout)
		}
	}
}
