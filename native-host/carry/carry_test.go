package carry

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/mpsurf/mpsurf/native-host/relay"
)

// New builds and starts nothing: the relay's listener and the helper's session come with Start. The proxy's
// settings are the caller's to read; an unreadable file is reported in the status, an absent one is no error.
func TestNewStartsNothing(t *testing.T) {
	file := filepath.Join(t.TempDir(), "proxy.json")
	up := relay.Upstream{Addr: "proxy.example:8443", User: "u", Password: "p"}
	if err := WriteProxyConfig(file, up); err != nil {
		t.Fatal(err)
	}
	read, err := ReadProxyConfig(file)
	if err != nil {
		t.Fatal(err)
	}
	c := New(Config{Helper: filepath.Join(t.TempDir(), "no.sock"), ProxyFile: file, Proxy: &read})
	t.Cleanup(c.Close)
	if st := c.ProxyStatus(); st.Relay != nil || st.State != "unconfigured" {
		t.Errorf("before Start: %+v", st)
	}
	if h := c.Health(); h.State != "unavailable" || h.Detail == "" {
		t.Errorf("before Start: helper %+v", h)
	}
	c.Start()
	st := c.ProxyStatus()
	if st.Relay == nil || st.Server != up.Addr {
		t.Fatalf("after Start: %+v", st)
	}
	conn, err := net.Dial("tcp", net.JoinHostPort(st.Relay.Host, strconv.Itoa(st.Relay.Port)))
	if err != nil {
		t.Fatalf("the relay does not listen after Start: %v", err)
	}
	conn.Close()

	bad := New(Config{ProxyFile: file, ProxyErr: errors.New(file + " is readable by others (mode 644): chmod 600 it")})
	if st := bad.ProxyStatus(); st.State != "error" || st.Relay != nil {
		t.Errorf("unreadable settings: %+v", st)
	}
	none := New(Config{ProxyFile: file, ProxyErr: os.ErrNotExist})
	if st := none.ProxyStatus(); st.State != "unconfigured" {
		t.Errorf("no settings: %+v", st)
	}
}
