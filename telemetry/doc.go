// Package telemetry is paper003's end-to-end telemetry scheme through an
// untrusted MQTT broker: a device encapsulates to the gateway's ML-KEM-512
// key, both sides derive an Ascon-AEAD128 key and nonce prefix with
// Ascon-CXOF128, and every frame is counter (8 bytes) || ciphertext || tag
// (16 bytes), 24 bytes of overhead, with the nonce built from the counter and
// the associated data binding the topic (device and session) and the counter.
// The byte-for-byte specification a board implements is firmware/TELEMETRY.md;
// this package is the host's reference of it and the gateway.
//
// # Device
//
// [Device.Handshake] (pinned mode) or [Device.RequestKey] then
// [Request.Complete] (forward-secret mode) return a new [Session]; its
// [Session.Seal] numbers frames 0, 1, 2, ... and cannot be rewound. A
// session lives in memory only: a restart or a lost counter is a new
// handshake, a new encapsulation and so a new key, so no (key, nonce) pair
// is ever used twice.
//
// # Gateway
//
// [Gateway.Receive] takes every message the broker hands over and either
// returns an [Event] (a frame delivered, a session opened, an ephemeral key
// to publish) or a [*RejectError] whose [Reason] has been counted in
// [Gateway.Stats]. Frames are authenticated before their counter is
// judged, so a forged frame counts as forged whatever counter it claims.
// An authenticated frame is delivered if its counter was never accepted and
// is not older than the window; a counter accepted before is a duplicate
// while it is inside the window and a replay once it is older: a QoS 1
// redelivery and a broker's replay are the same bytes and cannot be told
// apart otherwise. Neither is delivered twice. Counters skipped under the
// highest accepted one are reported as Missing (drops, or frames still in
// flight).
//
// The gateway keeps in memory the session ids it has ever opened, so a
// replayed handshake cannot reopen an old session (and with it its old
// frames); a gateway that restarts must keep that set ([Gateway.OpenedSessions],
// [GatewayConfig.Opened]), or use the forward-secret mode whose ephemeral
// keys are single use.
package telemetry
