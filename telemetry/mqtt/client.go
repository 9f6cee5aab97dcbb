package mqtt

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/eclipse/paho.golang/paho"

	"pqrepro/telemetry"
)

// QoS is the MQTT QoS of every message of the scheme (firmware/TELEMETRY.md section 3.1).
const QoS = 1

// ErrBrokerGone is returned once the connection to the broker is lost.
var ErrBrokerGone = errors.New("mqtt: connection to the broker lost")

// Client is one MQTT 5 connection (paho.golang) to a broker. Messages it receives on its
// subscriptions go to the handler given to Dial, one at a time, in arrival order; the
// message is acknowledged (QoS 1) after the handler returns.
type Client struct {
	c    *paho.Client
	id   string
	once sync.Once
	err  error
	mu   sync.Mutex
	gone chan struct{}
}

// Handler receives one application message; it must not block for long (it holds up the
// connection's reader).
type Handler func(telemetry.Message)

// Dial connects to the broker at addr (host:port) with a clean session under clientID.
func Dial(ctx context.Context, addr, clientID string, h Handler) (*Client, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("mqtt: dial broker %s: %w", addr, err)
	}
	cl := &Client{id: clientID, gone: make(chan struct{})}
	cfg := paho.ClientConfig{
		ClientID: clientID,
		Conn:     conn,
		OnClientError: func(err error) {
			cl.lost(err)
		},
		OnServerDisconnect: func(d *paho.Disconnect) {
			cl.lost(fmt.Errorf("broker sent disconnect, reason code %d", d.ReasonCode))
		},
		PacketTimeout: 10 * time.Second,
	}
	if h != nil {
		cfg.OnPublishReceived = []func(paho.PublishReceived) (bool, error){
			func(pr paho.PublishReceived) (bool, error) {
				h(telemetry.Message{Topic: pr.Packet.Topic, Payload: pr.Packet.Payload})
				return true, nil
			},
		}
	}
	cl.c = paho.NewClient(cfg)
	ca, err := cl.c.Connect(ctx, &paho.Connect{ClientID: clientID, CleanStart: true, KeepAlive: 30})
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("mqtt: connect to %s as %s: %w", addr, clientID, err)
	}
	if ca.ReasonCode != 0 {
		conn.Close()
		return nil, fmt.Errorf("mqtt: connect to %s as %s: refused, reason code %d", addr, clientID, ca.ReasonCode)
	}
	go func() {
		select {
		case <-cl.c.Done():
			cl.lost(errors.New("connection closed"))
		case <-cl.gone:
		}
	}()
	return cl, nil
}

func (cl *Client) lost(err error) {
	cl.once.Do(func() {
		cl.mu.Lock()
		cl.err = fmt.Errorf("%w (%s): %v", ErrBrokerGone, cl.id, err)
		cl.mu.Unlock()
		close(cl.gone)
	})
}

// Gone is closed once the connection is lost; Err then says why.
func (cl *Client) Gone() <-chan struct{} { return cl.gone }

// Err is nil while connected, else why the connection was lost (wrapping ErrBrokerGone).
func (cl *Client) Err() error {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	return cl.err
}

// Subscribe subscribes to the topic filters at QoS 1.
func (cl *Client) Subscribe(ctx context.Context, filters ...string) error {
	s := &paho.Subscribe{}
	for _, f := range filters {
		s.Subscriptions = append(s.Subscriptions, paho.SubscribeOptions{Topic: f, QoS: QoS})
	}
	sa, err := cl.c.Subscribe(ctx, s)
	if err != nil {
		return fmt.Errorf("mqtt: subscribe %v: %w", filters, err)
	}
	for i, rc := range sa.Reasons {
		if rc >= 0x80 {
			return fmt.Errorf("mqtt: subscribe %s: refused, reason code %d", filters[i], rc)
		}
	}
	return nil
}

// Publish publishes m at QoS 1 and returns once the broker acknowledged it.
func (cl *Client) Publish(ctx context.Context, m telemetry.Message) error {
	if err := cl.Err(); err != nil {
		return err
	}
	pr, err := cl.c.Publish(ctx, &paho.Publish{Topic: m.Topic, QoS: QoS, Payload: m.Payload})
	if err != nil {
		if e := cl.Err(); e != nil {
			return fmt.Errorf("mqtt: publish on %s: %w", m.Topic, e)
		}
		return fmt.Errorf("mqtt: publish on %s: %w", m.Topic, err)
	}
	if pr != nil && pr.ReasonCode >= 0x80 {
		return fmt.Errorf("mqtt: publish on %s: refused, reason code %d", m.Topic, pr.ReasonCode)
	}
	return nil
}

// PublishAsync hands m to the connection at QoS 1 without waiting for the broker's
// acknowledgement: calls from one goroutine go out in call order, and a call blocks only
// while the broker's receive maximum of unacknowledged messages is in flight. A lost
// connection shows in Gone and Err.
func (cl *Client) PublishAsync(ctx context.Context, m telemetry.Message) error {
	if err := cl.Err(); err != nil {
		return err
	}
	if _, err := cl.c.PublishWithOptions(ctx, &paho.Publish{Topic: m.Topic, QoS: QoS, Payload: m.Payload}, paho.PublishOptions{Method: paho.PublishMethod_AsyncSend}); err != nil {
		if e := cl.Err(); e != nil {
			return fmt.Errorf("mqtt: publish on %s: %w", m.Topic, e)
		}
		return fmt.Errorf("mqtt: publish on %s: %w", m.Topic, err)
	}
	return nil
}

// Close disconnects cleanly.
func (cl *Client) Close() error {
	cl.lost(errors.New("closed by the client"))
	if err := cl.c.Disconnect(&paho.Disconnect{ReasonCode: 0}); err != nil && !errors.Is(err, net.ErrClosed) {
		return fmt.Errorf("mqtt: disconnect %s: %w", cl.id, err)
	}
	return nil
}
