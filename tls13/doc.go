// Package tls13 is pqrepro's own TLS 1.3 engine (RFC 8446), client and server, written so the
// TLS matrix can run every key exchange × signature cell, including the pure ML-KEM groups no
// Go TLS library offers. It writes only the protocol; every primitive is the standard
// library's (crypto/mlkem, crypto/mldsa, crypto/ecdh, crypto/ecdsa, crypto/ed25519,
// crypto/rsa, crypto/x509, crypto/hkdf, crypto/aes + crypto/cipher), except ML-KEM-512, which
// comes from circl because the standard library has none, and ChaCha20-Poly1305 from
// golang.org/x/crypto.
//
// # What it does
//
// Groups: ML-KEM-512/768/1024 (draft-ietf-tls-mlkem), X25519, P-256, and the hybrids
// X25519MLKEM768 (ML-KEM share first, secret ML-KEM ‖ X25519), SecP256r1MLKEM768 and
// SecP384r1MLKEM1024 (ECDH share first, secret ECDH ‖ ML-KEM). The server runs the FIPS 203
// §7.2 encapsulation-key check (crypto/mlkem's NewEncapsulationKey*, and the modulus check
// written here for circl's ML-KEM-512) and ECDH point validation: illegal_parameter on failure.
// The client checks the server share's length: illegal_parameter; other decapsulation failures
// are internal_error.
//
// Signature schemes: mldsa44/65/87 (pure ML-DSA, empty context), ed25519,
// ecdsa_secp256r1_sha256, rsa_pss_rsae_sha256 (salt = hash length), over the RFC 8446 §4.4.3
// content. Suites: TLS_AES_128_GCM_SHA256 (default), TLS_AES_256_GCM_SHA384,
// TLS_CHACHA20_POLY1305_SHA256. No PSK, resumption, early data or client certificates (a
// CertificateRequest is answered with an empty Certificate). A server sends no
// NewSessionTicket; a client reads and discards them. KeyUpdate is honoured.
// HelloRetryRequest: a server that accepts none of the client's key shares but one of its
// supported groups retries; the client answers once. ChangeCipherSpec records are tolerated
// during the handshake; the server sends one after its first flight's ServerHello/HRR when the
// client used a legacy_session_id (middlebox compatibility), and the client always sends a
// 32-byte legacy_session_id.
//
// Record layer: handshake messages sent under the same keys share records (up to 2^14 bytes
// each) and a flight leaves in one socket write; received handshake messages may be split
// over records or coalesced in one; padding after the inner content type is stripped. No
// padding is sent. Sealing and opening work in place, with no allocation per record.
//
// # Alerts
//
// Every failure sends one alert and makes the Conn dead: Handshake, Read and Write then return
// the same *AlertError. A bad CertificateVerify signature or a bad Finished: decrypt_error. A
// CertificateVerify scheme the client did not offer or that does not fit the leaf's key:
// illegal_parameter. Untrusted issuer: unknown_ca. Wrong host name or an unparsable
// certificate: bad_certificate (what crypto/tls sends; RFC 8446 leaves the choice between it and
// certificate_unknown open, and bad_certificate names the certificate as unacceptable rather
// than the processing as failed). Expired: certificate_expired. Malformed or truncated
// message: decode_error. A message out of order, or a record type not allowed at that point:
// unexpected_message. Malformed key share: illegal_parameter. No common suite, group or
// scheme: handshake_failure; a ClientHello without signature_algorithms, supported_groups or
// key_share: missing_extension. A record over 2^14 (plaintext) or 2^14+256 (ciphertext) bytes:
// record_overflow; a record that does not authenticate: bad_record_mac.
//
// # What Stats measures
//
// Durations are wall-clock, from time.Now around the primitive call alone:
//
//   - Handshake, client: from the start of Handshake (before the ClientHello's key shares are
//     generated) until its own Finished has been written to the socket, after the server's
//     Finished was verified. Server: from the moment the whole first ClientHello has been read
//     until the client's Finished is verified.
//   - KeyShare (client): generating every key share it sends (both ClientHellos after an HRR).
//   - Encapsulate (server): checking the client's share, encapsulation and/or ECDH including the
//     server's own ephemeral ECDH key.
//   - Decapsulate (client): decapsulation and/or ECDH with the server's share.
//   - Sign (server) / Verify (client): the CertificateVerify signature.
//   - ChainVerify (client): parsing the certificates and crypto/x509 Verify (chain to RootCAs,
//     validity at Config.Time, host name).
//   - KeySchedule: HKDF-Extract/Expand for the secrets, traffic key derivation with AEAD key
//     setup, Finished HMACs.
//   - RecordLayer: AEAD Seal and Open of handshake-time records.
//   - Primitive = KeyShare + Encapsulate + Decapsulate + Sign + Verify + ChainVerify +
//     KeySchedule + RecordLayer.
//   - Wait: time blocked in the socket's Read during Handshake, i.e. waiting for the peer
//     (for the client, this includes all of the server's work and the network).
//   - Protocol = Handshake − Primitive − Wait: message encoding and parsing, transcript
//     hashing, negotiation, record framing and socket writes.
//
// Flights lists every flight (a run of records in one direction) with its wire bytes and the
// messages in it (ChangeCipherSpec included), as seen by this side; BytesSent and
// BytesReceived count handshake records (headers included) on the wire; ChainBytes is the
// total DER size of the certificate_list.
//
// # From another module
//
// The module path is plain pqrepro, which no public host serves: an outside module requires
// pqrepro v0.0.0 and adds `replace pqrepro => /path/to/checkout` (the README's recipe;
// TestOutsideModuleReplace builds it offline).
package tls13
