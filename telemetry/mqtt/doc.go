// Package mqtt carries the telemetry scheme (package telemetry, firmware/TELEMETRY.md) over
// MQTT 5: a device link that publishes handshakes and sealed frames, a gateway link that
// subscribes to every device's topics and hands each message to a telemetry.Gateway, and the
// brokers the project runs them through: an embedded mochi-mqtt broker (the default when no
// broker URL is configured) and a Mosquitto process (the independent broker of the tests).
//
// The broker is untrusted by design: nothing here relies on it for integrity, ordering or
// exactly-once delivery. QoS 1 is used for every message (at-least-once; the gateway's
// replay window removes the legal duplicates), with clean sessions and no retained
// messages. The clients are paho.golang's MQTT 5 client over plain TCP: the broker is
// assumed compromised, so TLS to it would add no end-to-end property (paper003 ran without
// TLS as well).
package mqtt
