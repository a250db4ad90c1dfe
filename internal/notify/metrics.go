package notify

import "github.com/prometheus/client_golang/prometheus"

var (
	descSent       = prometheus.NewDesc("harness_notify_sent_total", "Messages delivered, by notifier.", []string{"notifier"}, nil)
	descFailed     = prometheus.NewDesc("harness_notify_failed_total", "Messages given up (a 4xx, or out of retries), by notifier.", []string{"notifier"}, nil)
	descDropped    = prometheus.NewDesc("harness_notify_dropped_total", "Messages dropped because a queue was full, by notifier.", []string{"notifier"}, nil)
	descRetries    = prometheus.NewDesc("harness_notify_retries_total", "Delivery retries, by notifier.", []string{"notifier"}, nil)
	descSuppressed = prometheus.NewDesc("harness_notify_suppressed_total", "Messages not sent during a cooldown, by notifier.", []string{"notifier"}, nil)
	descQueued     = prometheus.NewDesc("harness_notify_queued", "Messages waiting for delivery, by notifier.", []string{"notifier"}, nil)
)

// Describe implements prometheus.Collector.
func (n *Notifier) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descSent, descFailed, descDropped, descRetries, descSuppressed, descQueued} {
		ch <- d
	}
}

// Collect implements prometheus.Collector: Stats as metrics.
func (n *Notifier) Collect(ch chan<- prometheus.Metric) {
	for _, s := range n.Stats() {
		ch <- prometheus.MustNewConstMetric(descSent, prometheus.CounterValue, float64(s.Sent), s.Name)
		ch <- prometheus.MustNewConstMetric(descFailed, prometheus.CounterValue, float64(s.Failed), s.Name)
		ch <- prometheus.MustNewConstMetric(descDropped, prometheus.CounterValue, float64(s.Dropped), s.Name)
		ch <- prometheus.MustNewConstMetric(descRetries, prometheus.CounterValue, float64(s.Retries), s.Name)
		ch <- prometheus.MustNewConstMetric(descSuppressed, prometheus.CounterValue, float64(s.Suppressed), s.Name)
		ch <- prometheus.MustNewConstMetric(descQueued, prometheus.GaugeValue, float64(s.Queued), s.Name)
	}
}
