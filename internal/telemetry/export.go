package telemetry

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// Bounds of the span queue and of one export.
const (
	// spanQueue spans wait for the exporter; a full queue drops the
	// newest, counted, so a slow collector never holds up a caller.
	spanQueue = 4096
	// spanBatch spans go in one export at most.
	spanBatch = 512
	// flushEvery is how long a span waits for a batch to fill.
	flushEvery = time.Second
)

// queueProcessor is a span processor whose OnEnd never blocks: it hands
// the span to one exporting goroutine over a bounded queue. The SDK's
// batch processor also drops when full but does not count what it drops
// where the daemon can show it.
type queueProcessor struct {
	exp     sdktrace.SpanExporter
	timeout time.Duration
	onError func(error)
	q       chan sdktrace.ReadOnlySpan
	flush   chan chan struct{}
	done    chan struct{}
	// mu orders OnEnd's send before Shutdown's close of q.
	mu     sync.RWMutex
	closed bool

	exported, dropped, failed atomic.Uint64
}

func newQueueProcessor(exp sdktrace.SpanExporter, timeout time.Duration, onError func(error)) *queueProcessor {
	if onError == nil {
		onError = func(error) {}
	}
	p := &queueProcessor{
		exp: exp, timeout: timeout, onError: onError,
		q:     make(chan sdktrace.ReadOnlySpan, spanQueue),
		flush: make(chan chan struct{}),
		done:  make(chan struct{}),
	}
	go p.loop()
	return p
}

// OnStart implements sdktrace.SpanProcessor.
func (p *queueProcessor) OnStart(context.Context, sdktrace.ReadWriteSpan) {}

// OnEnd implements sdktrace.SpanProcessor: queued, or dropped and counted.
func (p *queueProcessor) OnEnd(s sdktrace.ReadOnlySpan) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.closed {
		p.dropped.Add(1)
		return
	}
	select {
	case p.q <- s:
	default:
		p.dropped.Add(1)
	}
}

func (p *queueProcessor) loop() {
	defer close(p.done)
	batch := make([]sdktrace.ReadOnlySpan, 0, spanBatch)
	tick := time.NewTicker(flushEvery)
	defer tick.Stop()
	send := func() {
		if len(batch) == 0 {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), p.timeout)
		err := p.exp.ExportSpans(ctx, batch)
		cancel()
		if err != nil {
			p.failed.Add(uint64(len(batch)))
			p.onError(err)
		} else {
			p.exported.Add(uint64(len(batch)))
		}
		clear(batch)
		batch = batch[:0]
	}
	for {
		select {
		case s, ok := <-p.q:
			if !ok {
				send()
				return
			}
			batch = append(batch, s)
			if len(batch) == spanBatch {
				send()
			}
		case <-tick.C:
			send()
		case ack := <-p.flush:
			// Take what is queued now, then export it.
			for n := len(p.q); n > 0; n-- {
				s, ok := <-p.q
				if !ok {
					break
				}
				batch = append(batch, s)
				if len(batch) == spanBatch {
					send()
				}
			}
			send()
			close(ack)
		}
	}
}

// ForceFlush implements sdktrace.SpanProcessor: exports what is queued.
func (p *queueProcessor) ForceFlush(ctx context.Context) error {
	ack := make(chan struct{})
	select {
	case p.flush <- ack:
	case <-ctx.Done():
		return ctx.Err()
	case <-p.done:
		return nil
	}
	select {
	case <-ack:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Shutdown implements sdktrace.SpanProcessor: exports what is queued
// (bounded by ctx) and stops.
func (p *queueProcessor) Shutdown(ctx context.Context) error {
	p.mu.Lock()
	if !p.closed {
		p.closed = true
		close(p.q)
	}
	p.mu.Unlock()
	select {
	case <-p.done:
	case <-ctx.Done():
		return ctx.Err()
	}
	return p.exp.Shutdown(ctx)
}
