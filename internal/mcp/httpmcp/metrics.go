package httpmcp

import (
	"net/http"

	"github.com/harness-dev/harness/internal/logkey"
)

// MetricsPath is where the operator reads the daemon's metrics in the
// Prometheus text format (docs/design/mcp.md).
const MetricsPath = "/metrics"

// serveMetrics answers MetricsPath once the Host and Origin checks have
// passed: 404 when no metrics are served, 401 without a valid bearer token,
// 403 for a harness's token: the metrics name every harness and tool, which
// is the operator's view, not one harness's.
func (h *handler) serveMetrics(w http.ResponseWriter, r *http.Request) {
	if h.opt.Metrics == nil {
		refuse(w, http.StatusNotFound)
		return
	}
	c, err := h.authenticate(r)
	if err != nil {
		h.log.Info("refused unauthenticated metrics request", logkey.Remote, r.RemoteAddr, logkey.Err, err)
		w.Header().Set("WWW-Authenticate", "Bearer")
		refuse(w, http.StatusUnauthorized)
		return
	}
	if !c.operator {
		h.log.Warn("refused metrics to a harness token", logkey.Harness, c.id.Harness)
		refuse(w, http.StatusForbidden)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		refuse(w, http.StatusMethodNotAllowed)
		return
	}
	h.opt.Metrics.ServeHTTP(w, r)
}
