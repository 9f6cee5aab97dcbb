// Package telemetry is the runner side of the mqtt-telemetry experiment kind: the gateway
// harness every telemetry cell runs against (Harness: a broker, a verifying gateway and its
// link), on the host board and on a board alike, and the device layer's executor (Board), in
// which board firmware is the device. The protocol itself is package pqrepro/telemetry and its
// MQTT transport pqrepro/telemetry/mqtt.
package telemetry

import (
	"context"
	"fmt"
	"sync"
	"time"

	"pqrepro/artifacts"
	"pqrepro/telemetry"
	"pqrepro/telemetry/mqtt"
)

// Wait bounds every wait for the gateway: a session opened, a frame delivered.
const Wait = 30 * time.Second

// Harness is one cell's broker, gateway and gateway link. The gateway's verdicts go to the
// handlers set with Handle (frames, and everything else), except opened sessions, which
// AwaitSession waits for. Close releases everything it started, and whatever was added with
// OnClose, in reverse order.
type Harness struct {
	// Broker names the broker as the cell records it; Addr is where it listens.
	Broker, Addr string
	Gateway      *telemetry.Gateway
	Link         *mqtt.GatewayLink

	closers  []func()
	sessions chan telemetry.SessionID

	mu      sync.Mutex
	onFrame func(mqtt.Verdict)
	other   func(mqtt.Verdict)
}

// StartHarness starts the broker spec names (the embedded one for artifacts.MQTTBrokerEmbedded),
// a gateway configured with cfg, and its link to the broker as client "pqrepro-gateway-"+name.
// On error everything started is closed again.
func StartHarness(ctx context.Context, spec *artifacts.MQTTSpec, name string, cfg telemetry.GatewayConfig) (*Harness, error) {
	h := &Harness{sessions: make(chan telemetry.SessionID, 16)}
	ok := false
	defer func() {
		if !ok {
			h.Close()
		}
	}()
	if spec.Broker == artifacts.MQTTBrokerEmbedded {
		e, err := mqtt.StartEmbedded("", 0, nil)
		if err != nil {
			return nil, err
		}
		h.OnClose(func() { e.Close() })
		h.Addr, h.Broker = e.Addr(), e.Name()
	} else {
		addr, err := artifacts.MQTTBrokerAddr(spec.Broker)
		if err != nil {
			return nil, err
		}
		h.Addr, h.Broker = addr, spec.Broker
	}
	var err error
	h.Gateway, err = telemetry.NewGateway(cfg)
	if err != nil {
		return nil, err
	}
	h.Link, err = mqtt.DialGateway(ctx, h.Addr, "pqrepro-gateway-"+name, h.Gateway, h.verdict)
	if err != nil {
		return nil, fmt.Errorf("broker %s: %w", h.Broker, err)
	}
	h.OnClose(func() { h.Link.Close() })
	ok = true
	return h, nil
}

// verdict routes one of the gateway's verdicts.
func (h *Harness) verdict(v mqtt.Verdict) {
	if v.Err == nil && v.Event.Kind == telemetry.EventSession {
		select {
		case h.sessions <- v.Event.Session:
		default:
		}
		return
	}
	h.mu.Lock()
	f, o := h.onFrame, h.other
	h.mu.Unlock()
	if v.Err == nil && v.Event.Kind == telemetry.EventFrame && f != nil {
		f(v)
	} else if o != nil {
		o(v)
	}
}

// OnClose adds f to what Close releases (before what was added earlier).
func (h *Harness) OnClose(f func()) { h.closers = append(h.closers, f) }

// Close releases what the harness started and what was added with OnClose, newest first.
func (h *Harness) Close() {
	for i := len(h.closers) - 1; i >= 0; i-- {
		h.closers[i]()
	}
}

// Handle sets the handlers of the gateway's verdicts from now on: onFrame gets every frame it
// opened, other every other verdict (a refusal, an error); nil drops them.
func (h *Harness) Handle(onFrame, other func(mqtt.Verdict)) {
	h.mu.Lock()
	h.onFrame, h.other = onFrame, other
	h.mu.Unlock()
}

// FailedLink is the run-breaking error of a lost broker connection, the gateway's or one of
// others, or nil.
func (h *Harness) FailedLink(others ...*mqtt.Client) error {
	for _, c := range append([]*mqtt.Client{h.Link.Client()}, others...) {
		if err := c.Err(); err != nil {
			return fmt.Errorf("broker %s: %w", h.Broker, err)
		}
	}
	return nil
}

// AwaitSession waits (at most Wait) for the gateway to open session sid.
func (h *Harness) AwaitSession(ctx context.Context, sid telemetry.SessionID) error {
	timer := time.NewTimer(Wait)
	defer timer.Stop()
	for {
		select {
		case got := <-h.sessions:
			if got == sid {
				return nil
			}
		case <-h.Link.Client().Gone():
			return h.Link.Client().Err()
		case <-ctx.Done():
			return ctx.Err()
		case <-timer.C:
			return fmt.Errorf("the gateway opened no session %s within %s", sid, Wait)
		}
	}
}

// CatchFrame has the frame handler keep the plaintext of the next frame that keep accepts
// (every frame when keep is nil); the returned wait gives it, once the frame was sent, or the
// error of a lost gateway link or of Wait passing.
func (h *Harness) CatchFrame(keep func(mqtt.Verdict) bool) (wait func() ([]byte, error)) {
	got := make(chan []byte, 1)
	h.Handle(func(v mqtt.Verdict) {
		if keep == nil || keep(v) {
			select {
			case got <- v.Event.Plaintext:
			default:
			}
		}
	}, nil)
	return func() ([]byte, error) {
		select {
		case p := <-got:
			return p, nil
		case <-h.Link.Client().Gone():
			return nil, h.Link.Client().Err()
		case <-time.After(Wait):
			return nil, fmt.Errorf("the gateway delivered no frame within %s", Wait)
		}
	}
}

// AwaitDelivery polls cond (under mu) until it holds, the broker link fails (failed), ctx ends
// or timeout passes, naming what it waited for. The host's and a board's telemetry runs wait
// for the gateway's verdicts this way.
func AwaitDelivery(ctx context.Context, mu *sync.Mutex, failed func() error, timeout time.Duration, what string, cond func() bool) error {
	deadline := time.Now().Add(timeout)
	for {
		mu.Lock()
		ok := cond()
		mu.Unlock()
		if ok {
			return nil
		}
		if err := failed(); err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(time.Millisecond)
	}
}
