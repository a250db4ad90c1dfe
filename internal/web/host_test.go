package web

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"testing"
)

// TestScenario_TheDashboardRefusesAnEmptyHost: the dashboard answers 403
// to an empty Host header, also behind a loopback URL in the request line
// (net/http then takes the URL's host for the Host header).
func TestScenario_TheDashboardRefusesAnEmptyHost(t *testing.T) {
	r := newRig(t)
	addr := r.ts.Listener.Addr().String()
	for _, target := range []string{"/login", "http://" + addr + "/login"} {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: \r\nConnection: close\r\n\r\n", target)
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		c.Close()
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("GET %s with an empty Host: %d, want 403", target, resp.StatusCode)
		}
	}
}
