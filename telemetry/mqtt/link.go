package mqtt

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"pqrepro/telemetry"
)

// DeviceLink is a device on a broker: it publishes its handshakes and frames and, for the
// forward-secret mode, receives its offers. Not safe for concurrent handshakes.
type DeviceLink struct {
	d      *telemetry.Device
	id     string
	cl     *Client
	offers chan telemetry.Message
}

// DialDevice connects device d (named id, as in its config) to the broker at addr and
// subscribes to its offer topic.
func DialDevice(ctx context.Context, addr, id string, d *telemetry.Device) (*DeviceLink, error) {
	l := &DeviceLink{d: d, id: id, offers: make(chan telemetry.Message, 4)}
	cl, err := Dial(ctx, addr, "pqrepro-dev-"+id, func(m telemetry.Message) {
		if m.Topic != telemetry.OfferTopic(id) {
			return
		}
		select {
		case l.offers <- m:
		default: // a flood of offers (a broker's injection) is dropped, not queued
		}
	})
	if err != nil {
		return nil, fmt.Errorf("device %s: %w", id, err)
	}
	l.cl = cl
	if err := cl.Subscribe(ctx, telemetry.OfferTopic(id)); err != nil {
		cl.Close()
		return nil, fmt.Errorf("device %s: %w", id, err)
	}
	return l, nil
}

// Client is the link's MQTT connection.
func (l *DeviceLink) Client() *Client { return l.cl }

// Handshake runs a pinned handshake: it encapsulates with randomness from rand and publishes
// the ciphertext. The session is the device's as soon as the broker has the handshake.
func (l *DeviceLink) Handshake(ctx context.Context, rand io.Reader) (*telemetry.Session, error) {
	hs, s, err := l.d.Handshake(rand)
	if err != nil {
		return nil, fmt.Errorf("device %s: %w", l.id, err)
	}
	if err := l.cl.Publish(ctx, hs); err != nil {
		return nil, fmt.Errorf("device %s: handshake: %w", l.id, err)
	}
	return s, nil
}

// HandshakeForwardSecret publishes a key request, waits for the gateway's signed offer
// (offers for another request are refused and waited past), completes it and publishes the
// handshake.
func (l *DeviceLink) HandshakeForwardSecret(ctx context.Context, rand io.Reader, now func() time.Time) (*telemetry.Session, error) {
	rq, req, err := l.d.RequestKey(rand)
	if err != nil {
		return nil, fmt.Errorf("device %s: %w", l.id, err)
	}
	if err := l.cl.Publish(ctx, rq); err != nil {
		return nil, fmt.Errorf("device %s: key request: %w", l.id, err)
	}
	for {
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("device %s: waiting for the gateway's key: %w", l.id, ctx.Err())
		case <-l.cl.Gone():
			return nil, fmt.Errorf("device %s: waiting for the gateway's key: %w", l.id, l.cl.Err())
		case offer := <-l.offers:
			hs, s, err := req.Complete(offer, now(), rand)
			if errors.Is(err, telemetry.ErrOfferNonce) || errors.Is(err, telemetry.ErrOfferSignature) {
				continue // not ours, or forged: keep waiting for the genuine answer
			}
			if err != nil {
				return nil, fmt.Errorf("device %s: %w", l.id, err)
			}
			if err := l.cl.Publish(ctx, hs); err != nil {
				return nil, fmt.Errorf("device %s: forward-secret handshake: %w", l.id, err)
			}
			return s, nil
		}
	}
}

// Send seals plaintext in session s and publishes the frame; it returns the frame as sent.
func (l *DeviceLink) Send(ctx context.Context, s *telemetry.Session, plaintext []byte) (telemetry.Message, error) {
	f, err := s.Seal(plaintext)
	if err != nil {
		return telemetry.Message{}, fmt.Errorf("device %s: %w", l.id, err)
	}
	if err := l.cl.Publish(ctx, f); err != nil {
		return telemetry.Message{}, fmt.Errorf("device %s: frame: %w", l.id, err)
	}
	return f, nil
}

// Close disconnects the device.
func (l *DeviceLink) Close() error { return l.cl.Close() }

// GatewayLink is a gateway on a broker: every message on telemetry.GatewayFilters goes to the
// telemetry.Gateway, and what it decides goes to the callback given to DialGateway.
type GatewayLink struct {
	g  *telemetry.Gateway
	cl *Client
}

// Verdict is one message as the gateway judged it: the event when accepted, else the
// *telemetry.RejectError; At is when the message arrived, Msg the message itself.
type Verdict struct {
	Msg   telemetry.Message
	Event telemetry.Event
	Err   error
	At    time.Time
}

// DialGateway connects gateway g to the broker at addr under clientID and subscribes to
// telemetry.GatewayFilters. on is called for every message, one at a time, after g.Receive; offers are
// published back to the device before on is called (a failed publish is reported as an error
// Verdict with the event set).
func DialGateway(ctx context.Context, addr, clientID string, g *telemetry.Gateway, on func(Verdict)) (*GatewayLink, error) {
	l := &GatewayLink{g: g}
	var cl *Client
	ready := make(chan struct{})
	cl, err := Dial(ctx, addr, clientID, func(m telemetry.Message) {
		at := time.Now()
		<-ready
		ev, err := g.Receive(m)
		if err == nil && ev.Kind == telemetry.EventOffer && ev.Reply != nil {
			pctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			// Publish from another goroutine: this one must go on reading acknowledgements.
			errc := make(chan error, 1)
			go func() { errc <- cl.Publish(pctx, *ev.Reply) }()
			err = <-errc
			cancel()
		}
		if on != nil {
			on(Verdict{Msg: m, Event: ev, Err: err, At: at})
		}
	})
	if err != nil {
		return nil, fmt.Errorf("gateway: %w", err)
	}
	l.cl = cl
	close(ready)
	if err := cl.Subscribe(ctx, telemetry.GatewayFilters()...); err != nil {
		cl.Close()
		return nil, fmt.Errorf("gateway: %w", err)
	}
	return l, nil
}

// Client is the link's MQTT connection.
func (l *GatewayLink) Client() *Client { return l.cl }

// Close disconnects the gateway.
func (l *GatewayLink) Close() error { return l.cl.Close() }

// IsRejection reports whether err is the gateway refusing a message (as opposed to a
// transport failure), and the reason.
func IsRejection(err error) (telemetry.Reason, bool) {
	var re *telemetry.RejectError
	if errors.As(err, &re) {
		return re.Reason, true
	}
	return 0, false
}
