package battery

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// State is what the model needs to know of the battery.
type State struct {
	Present  bool    `json:"present"`
	Percent  float64 `json:"percent"`
	Charging bool    `json:"charging"`
}

// Read returns the state of the batteries under root+"/sys/class/power_supply" ("" = the live system). With
// several batteries the percentages are averaged, weighted by energy_full when every battery reports it.
// "Charging" means a battery reports Charging or Full, or an AC/USB supply is online.
func Read(root string) (State, error) {
	dir := filepath.Join(root, "sys", "class", "power_supply")
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return State{}, nil
	}
	if err != nil {
		return State{}, fmt.Errorf("battery: %w", err)
	}
	var st State
	var sum, weights float64
	weighted := true
	type cell struct{ pct, full float64 }
	var cells []cell
	for _, e := range entries {
		d := filepath.Join(dir, e.Name())
		kind := readString(filepath.Join(d, "type"))
		switch kind {
		case "Battery":
			if present, ok := readInt(filepath.Join(d, "present")); ok && present == 0 {
				continue
			}
			pct, err := ParsePercent(readString(filepath.Join(d, "capacity")))
			if err != nil {
				continue
			}
			full, ok := readInt(filepath.Join(d, "energy_full"))
			if !ok || full <= 0 {
				weighted = false
			}
			cells = append(cells, cell{pct, float64(full)})
			switch readString(filepath.Join(d, "status")) {
			case "Charging", "Full":
				st.Charging = true
			}
		case "Mains", "USB", "USB_C", "USB_PD":
			if online, ok := readInt(filepath.Join(d, "online")); ok && online == 1 {
				st.Charging = true
			}
		}
	}
	if len(cells) == 0 {
		// Mains alone (a desktop): nothing to save.
		return State{}, nil
	}
	for _, c := range cells {
		w := 1.0
		if weighted {
			w = c.full
		}
		sum += c.pct * w
		weights += w
	}
	st.Present = true
	st.Percent = sum / weights
	return st, nil
}

// ParsePercent reads a capacity file's content: an integer 0 … 100.
func ParsePercent(s string) (float64, error) {
	n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("battery: capacity %q: not an integer", s)
	}
	if n < 0 || n > 100 {
		return 0, fmt.Errorf("battery: capacity %d: outside 0 … 100", n)
	}
	return float64(n), nil
}

func readString(path string) string {
	b, err := os.ReadFile(path)
	if err != nil || len(b) > 256 {
		return ""
	}
	return strings.TrimSpace(string(b))
}

func readInt(path string) (int64, bool) {
	n, err := strconv.ParseInt(readString(path), 10, 64)
	return n, err == nil
}
