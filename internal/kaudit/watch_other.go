//go:build !linux

package kaudit

import (
	"log/slog"
	"time"
)

// Watcher follows nothing here: Landlock is Linux's.
type Watcher struct{}

// Start returns a Watcher that follows nothing.
func Start(*slog.Logger, Options) *Watcher { return &Watcher{} }

// Status says file refusals are not counted.
func (*Watcher) Status() Status { return Status{Why: WhyNoAudit} }

// Watch follows nothing.
func (*Watcher) Watch(int, time.Time, func(Denial)) func() { return func() {} }

// Close does nothing.
func (*Watcher) Close() {}
