//go:build linux

package main

import (
	"os/exec"
	"testing"
	"time"
)

func TestDbgGoodput(t *testing.T) {
	r, err := newRig("mpsdbg")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for _, rate := range []float64{10, 20, 50, 10, 20, 50} {
		for _, dir := range []string{"down"} {
			done := make(chan struct{})
			go func() {
				defer close(done)
				var last uint64
				for i := 0; i < 30; i++ {
					time.Sleep(100 * time.Millisecond)
					st := r.tb.Stats()["wlan0"]
					v := st.Down.OutBytes
					if dir == "up" {
						v = st.Up.OutBytes
					}
					t.Logf("%s %g t=%.1f %.2f Mbit/s drops d%d u%d pool %d/%d werr %d/%d", dir, rate, float64(i+1)/10, float64(v-last)*8/0.1/1e6, st.Down.Dropped, st.Up.Dropped, st.Down.PoolDrops, st.Up.PoolDrops, st.Down.WriteErrors, st.Up.WriteErrors)
					last = v
				}
			}()
			row, err := r.measureGoodput(rate, dir, time.Second, 2*time.Second)
			out, _ := exec.Command("ip", "netns", "exec", "mpsdbg-server", "ss", "-tin").CombinedOutput()
			out2, _ := exec.Command("ip", "netns", "exec", "mpsdbg-client", "ss", "-tin").CombinedOutput()
			<-done
			t.Logf("%+v err %v\n%s\n%s", row, err, out, out2)
		}
	}
}
