package qemu

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"time"
)

// qmp is a minimal client of QEMU's machine protocol on a unix socket: the greeting,
// qmp_capabilities, then one command at a time. Asynchronous events are skipped. It is not
// safe for concurrent use.
type qmp struct {
	c   net.Conn
	dec *json.Decoder
}

// dialQMP connects to sock, retrying until it accepts, ctx ends or alive reports that the
// process behind it has gone.
func dialQMP(ctx context.Context, sock string, alive func() error) (*qmp, error) {
	var c net.Conn
	var err error
	for {
		var d net.Dialer
		if c, err = d.DialContext(ctx, "unix", sock); err == nil {
			break
		}
		if aerr := alive(); aerr != nil {
			return nil, aerr
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("connect to QMP socket %s: %w (last: %v)", sock, ctx.Err(), err)
		case <-time.After(20 * time.Millisecond):
		}
	}
	q := &qmp{c: c, dec: json.NewDecoder(c)}
	c.SetDeadline(time.Now().Add(10 * time.Second))
	var greeting struct {
		QMP json.RawMessage `json:"QMP"`
	}
	if err := q.dec.Decode(&greeting); err != nil || greeting.QMP == nil {
		c.Close()
		return nil, fmt.Errorf("QMP greeting: %v", errOr(err, "no QMP greeting"))
	}
	if _, err := q.execute("qmp_capabilities", nil, 10*time.Second); err != nil {
		c.Close()
		return nil, err
	}
	return q, nil
}

func errOr(err error, msg string) error {
	if err != nil {
		return err
	}
	return errors.New(msg)
}

// execute runs one command and returns its "return" value.
func (q *qmp) execute(cmd string, args any, timeout time.Duration) (json.RawMessage, error) {
	q.c.SetDeadline(time.Now().Add(timeout))
	req := map[string]any{"execute": cmd}
	if args != nil {
		req["arguments"] = args
	}
	b, _ := json.Marshal(req)
	if _, err := q.c.Write(append(b, '\n')); err != nil {
		return nil, fmt.Errorf("QMP %s: %w", cmd, err)
	}
	for {
		var msg struct {
			Return json.RawMessage `json:"return"`
			Error  *struct {
				Class string `json:"class"`
				Desc  string `json:"desc"`
			} `json:"error"`
			Event string `json:"event"`
		}
		if err := q.dec.Decode(&msg); err != nil {
			return nil, fmt.Errorf("QMP %s: %w", cmd, err)
		}
		switch {
		case msg.Error != nil:
			return nil, fmt.Errorf("QMP %s: %s: %s", cmd, msg.Error.Class, msg.Error.Desc)
		case msg.Return != nil:
			return msg.Return, nil
		}
	}
}

func (q *qmp) close() error { return q.c.Close() }
