package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mpsurf/mpsurf/native-host/carry"
	"github.com/mpsurf/mpsurf/native-host/decide"
	"github.com/mpsurf/mpsurf/native-host/host"
	"github.com/mpsurf/mpsurf/native-host/model"
	"github.com/mpsurf/mpsurf/native-host/policy"
	"github.com/mpsurf/mpsurf/native-host/store"
	models "github.com/mpsurf/mpsurf/policy-models"
)

func discardLog() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func fp(x float64) *float64 { return &x }
func ip(x int64) *int64     { return &x }

// logDay logs decisions for a day's worth of varied conditions through the real decide path into a store.
func logDay(t *testing.T) (*store.Store, int) {
	t.Helper()
	db, err := store.Open(filepath.Join(t.TempDir(), "log.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	src, err := policy.Resolve("", "")
	if err != nil {
		t.Fatal(err)
	}
	params, psrc, err := model.Open("")
	if err != nil {
		t.Fatal(err)
	}
	day := &varied{}
	dec := decide.New(decide.Config{Params: params, ParamsSource: psrc, Links: day, Memory: day, Battery: day.battery})
	car := carry.New(carry.Config{ProxyFile: filepath.Join(t.TempDir(), "proxy.json"), Store: db, Tunnel: dec.Tunnel, Log: discardLog()})
	car.Start()
	srv := host.NewServer(host.Parts{Policy: policy.NewStore(src), Decider: dec, Carrier: car, Store: db, Log: discardLog()})
	sizes := []int64{20_000, 150_000, 600_000, 2_000_000, 4_000_000}
	states := []string{"idle", "continuous", "long_drx"}
	protos := []string{"h2", "http/1.1", "h3", ""}
	day.at = func(i int) {
		day.Given = decide.Given{
			Proto: protos[i%len(protos)],
			Sizes: history(i%5 != 0, sizes[i%len(sizes)]),
			Paths: decide.View{
				Primary:   &model.Path{Name: "wlan0", Kind: "wifi", Up: true, RTTMS: fp(50), DownBps: fp(7.04e6), UpBps: fp(2.02e6), Loss: fp(0)},
				Secondary: &model.Path{Name: "wwan0", Kind: "cellular", Up: true, RTTMS: fp(70 + float64(i%4)*30), DownBps: fp(9.185e6 / float64(1+i%3)), UpBps: fp(2.286e6), Loss: fp(0)},
				RRC:       &model.RRC{Tech: "lte", State: states[i%len(states)], SinceMS: 1000},
			},
		}
		day.bat = &model.Battery{Present: true, Percent: float64(10 + i%90), Charging: i%2 == 0}
	}
	n := 0
	for ; n < 60; n++ {
		day.at(n)
		req, _ := json.Marshal(map[string]any{"v": 1, "id": n + 1, "type": "decide",
			"body": map[string]any{"origin": "https://site" + string(rune('a'+n%20)) + ".example", "tab": 1, "nav": "n"}})
		if r := srv.Handle(req); !r.OK {
			t.Fatalf("decide %d: %+v", n, r.Error)
		}
	}
	return db, n
}

// varied is a day of conditions, one set per decision: decide.Given, changed between decisions.
type varied struct {
	decide.Given
	at  func(i int)
	bat *model.Battery
}

func (v *varied) battery() *model.Battery { return v.bat }

// history is three loads of a page around size, or none.
func history(known bool, size int64) store.History {
	if !known {
		return store.History{}
	}
	return store.History{Class: []int64{size, size * 2, size / 2}}
}

func TestReplaySameModelReproducesTheLog(t *testing.T) {
	db, n := logDay(t)
	params, err := model.Load(models.FS, models.Dir)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := replay(context.Background(), db, decide.New(decide.Config{Params: params}), 0)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Rows != n || rep.Replayed != n || rep.Skipped != 0 {
		t.Fatalf("rows %d replayed %d skipped %d, want %d, %d, 0", rep.Rows, rep.Replayed, rep.Skipped, n, n)
	}
	if rep.Changed != 0 {
		for _, d := range rep.Decisions {
			if d.Changed {
				t.Errorf("%s: logged %+v, replayed %+v", d.Origin, d.Logged, d.Replayed)
			}
		}
	}
	if rep.Logged != rep.Replayed2 {
		t.Errorf("totals differ: logged %+v, replayed %+v", rep.Logged, rep.Replayed2)
	}
	// The day must have both kinds of decision, or "reproduces" says little.
	if rep.Logged.MultipathCount == 0 || rep.Logged.MultipathCount == n {
		t.Errorf("%v of %d decisions multipath: the day is not varied enough", rep.Logged.MultipathCount, n)
	}
}

func TestReplayAnotherModelReportsChanges(t *testing.T) {
	db, _ := logDay(t)
	// A copy of policy-models/ where a second saved is worth far less in every mode: less multipath.
	dir := t.TempDir()
	entries, err := models.FS.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := models.FS.ReadFile(e.Name())
		if err != nil {
			t.Fatal(err)
		}
		if e.Name() == model.FileName {
			var m map[string]any
			if err := json.Unmarshal(b, &m); err != nil {
				t.Fatal(err)
			}
			for _, w := range m["modes"].(map[string]any) {
				w.(map[string]any)["time_per_s"] = w.(map[string]any)["time_per_s"].(float64) / 10
			}
			b, _ = json.Marshal(m)
		}
		if err := os.WriteFile(filepath.Join(dir, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	params, err := model.LoadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := replay(context.Background(), db, decide.New(decide.Config{Params: params}), 0)
	if err != nil {
		t.Fatal(err)
	}
	if rep.ToSingle == 0 || rep.ToMultipath != 0 {
		t.Errorf("to multipath %d, to single %d: valuing time less must only take multipath away", rep.ToMultipath, rep.ToSingle)
	}
	if rep.Replayed2.MultipathCount != rep.Logged.MultipathCount-rep.ToSingle {
		t.Errorf("multipath decisions: logged %d - %d dropped != replayed %d", rep.Logged.MultipathCount, rep.ToSingle, rep.Replayed2.MultipathCount)
	}
	var out bytes.Buffer
	printReplay(&out, rep)
	if !strings.Contains(out.String(), "changed:") {
		t.Errorf("report:\n%s", out.String())
	}
}
