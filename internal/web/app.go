package web

import (
	"bytes"
	"encoding/json"
	"image"
	"image/color"
	"image/png"
	"net/http"
	"strconv"
	"sync"

	"github.com/harness-dev/harness/internal/api"
)

// The dashboard as an installable web app: a manifest, two icons and a
// service worker, all served without a sign-in (a browser fetches a
// manifest and its icons without cookies). The service worker
// (assets/sw.js, served at /sw.js so its scope is the whole site) caches
// the shell under /assets/ only: never a page, /events or any answer that
// carries the fleet's state.

// iconSizes are the icon sizes the manifest names.
var iconSizes = []int{192, 512}

// manifest is the web app manifest.
func manifest() []byte {
	type icon struct {
		Src     string `json:"src"`
		Sizes   string `json:"sizes"`
		Type    string `json:"type"`
		Purpose string `json:"purpose"`
	}
	var icons []icon
	for _, n := range iconSizes {
		s := strconv.Itoa(n)
		icons = append(icons, icon{Src: "/icon-" + s + ".png", Sizes: s + "x" + s, Type: "image/png", Purpose: "any maskable"})
	}
	b, _ := json.Marshal(map[string]any{
		"name": "harness", "short_name": "harness", "description": "Your agents: who waits, who works, answer them.",
		"id": "/", "start_url": "/", "scope": "/", "display": "standalone",
		"background_color": "#ffffff", "theme_color": "#0b5cad", "icons": icons,
	})
	return b
}

var (
	iconOnce sync.Once
	iconPNG  map[int][]byte
)

// icon is the app icon of n pixels a side, drawn once: the accent colour
// with three white bars, short, long, short (a terminal's lines).
func icon(n int) []byte {
	iconOnce.Do(func() {
		iconPNG = map[int][]byte{}
		for _, size := range iconSizes {
			img := image.NewRGBA(image.Rect(0, 0, size, size))
			bg, fg := color.RGBA{0x0b, 0x5c, 0xad, 0xff}, color.RGBA{0xff, 0xff, 0xff, 0xff}
			u := size / 16
			for y := range size {
				for x := range size {
					img.Set(x, y, bg)
				}
			}
			// Within the maskable safe zone (the middle 80%).
			for i, w := range []int{5, 9, 6} {
				y0 := 5*u + i*2*u
				for y := y0; y < y0+u; y++ {
					for x := 4 * u; x < (4+w)*u; x++ {
						img.Set(x, y, fg)
					}
				}
			}
			var buf bytes.Buffer
			_ = png.Encode(&buf, img)
			iconPNG[size] = buf.Bytes()
		}
	})
	return iconPNG[n]
}

// serveApp answers the app's files; false when path is none of them.
func (s *Server) serveApp(w http.ResponseWriter, r *http.Request) bool {
	var body []byte
	var ctype string
	switch r.URL.Path {
	case "/manifest.webmanifest":
		body, ctype = manifest(), "application/manifest+json"
	case "/icon-192.png":
		body, ctype = icon(192), "image/png"
	case "/icon-512.png":
		body, ctype = icon(512), "image/png"
	case "/sw.js":
		b, err := assetFS.ReadFile("assets/sw.js")
		if err != nil {
			s.fail(w, r, http.StatusInternalServerError, "no service worker")
			return true
		}
		body, ctype = b, "text/javascript; charset=utf-8"
	default:
		return false
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		s.fail(w, r, http.StatusMethodNotAllowed, "read with GET")
		return true
	}
	w.Header().Set("Content-Type", ctype)
	w.Header().Set("Cache-Control", "no-cache")
	if r.Method == http.MethodGet {
		_, _ = w.Write(body)
	}
	return true
}

// serveWaiting is GET /waiting: how many agents wait, for the title and
// the app badge the script keeps live ({"waiting": N}).
func (s *Server) serveWaiting(w http.ResponseWriter, r *http.Request, rq *request) {
	if !rq.may(api.Read) {
		s.fail(w, r, http.StatusForbidden, "this token's grant does not include read")
		return
	}
	n, err := s.waitingCount(r)
	if err != nil {
		s.failOp(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write([]byte(`{"waiting":` + strconv.Itoa(n) + "}\n"))
}

// waitingCount is how many harnesses' agents wait now.
func (s *Server) waitingCount(r *http.Request) (int, error) {
	var units []unitView
	if err := s.call(r.Context(), api.OpList, api.ListArgs{}, &units); err != nil {
		return 0, err
	}
	n := s.remoteWaiting()
	for _, u := range units {
		if u.Waiting() {
			n++
		}
	}
	return n, nil
}
