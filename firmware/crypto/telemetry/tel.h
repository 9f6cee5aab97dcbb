/* The device side of the telemetry scheme (firmware/TELEMETRY.md, pinned mode): the
 * ML-KEM-512 handshake to the gateway's pinned key, the Ascon-CXOF128 key derivation and the
 * Ascon-AEAD128 frames. The host's reference is the Go package telemetry; firmware/
 * telemetry_test.go checks that this code gives byte-identical handshakes and frames.
 * No allocation; a session is about 150 bytes and may live anywhere. */
#ifndef PQ_TEL_H
#define PQ_TEL_H

#include <stddef.h>
#include <stdint.h>

#define TEL_VERSION 1
#define TEL_MODE_PINNED 1
#define TEL_MODE_FS 2    /* forward-secret: encapsulation to a signed ephemeral key */
#define TEL_EK 800       /* ML-KEM-512 encapsulation key */
#define TEL_CT 768       /* ML-KEM-512 ciphertext */
#define TEL_HS (2 + TEL_CT) /* the handshake payload: version || mode || ct */
#define TEL_SID 8
#define TEL_MAX_DEV 64
#define TEL_MAX_PSK 64
#define TEL_OVERHEAD 24  /* u64be counter (8) + tag (16) */
#define TEL_MAX_PAYLOAD 4096
#define TEL_MAX_COUNTER 0xfffffffffffffffeull /* 2^64 - 2; 2^64 - 1 is never sent */
/* "pqrepro/tm/v1/" (14) + device (64) + "/d/" (3) + sid in hex (16) */
#define TEL_MAX_TOPIC (14 + TEL_MAX_DEV + 3 + 2 * TEL_SID)

/* Forward-secret mode (TELEMETRY.md section 7). */
#define TEL_NONCE 16      /* the device's fresh nonce */
#define TEL_SIGPK 1312    /* ML-DSA-44 public key */
#define TEL_SIG 2420      /* ML-DSA-44 signature */
#define TEL_RQ (1 + TEL_NONCE) /* the request: version || nonce */
/* the offer: version || nonce || u64be expiry || ek_e || signature */
#define TEL_OFFER (1 + TEL_NONCE + 8 + TEL_EK + TEL_SIG)
#define TEL_HS_FS (2 + TEL_NONCE + TEL_CT) /* version || mode || nonce || ct */
#define TEL_MAX_OFFER_LIFE 600 /* seconds: an offer may expire at most 10 minutes ahead */

/* Why tel_fs_check refuses an offer, in the order the Go device checks. */
enum tel_offer_err {
	TEL_OFFER_OK = 0,
	TEL_OFFER_MALFORMED = -1, /* length, version, or ek_e fails the modulus check */
	TEL_OFFER_SIGNATURE = -2, /* ML-DSA-44 verification under the pinned key fails */
	TEL_OFFER_NONCE = -3,     /* answers another request */
	TEL_OFFER_EXPIRED = -4    /* expiry <= now or expiry > now + 10 min */
};

/* tel_offer_reason names an enum tel_offer_err value as the protocol reports it:
 * ok, malformed, signature, nonce, expired. */
const char *tel_offer_reason(int err);

/* tel_pin is the device's provisioning: the gateway's encapsulation key and its
 * Ascon-Hash256, which every handshake's key derivation binds. */
struct tel_pin {
	uint8_t ek[TEL_EK];
	uint8_t ekh[32];
};

struct tel_session {
	uint8_t key[16];
	uint8_t prefix[8];
	uint8_t sid[TEL_SID];
	char topic[TEL_MAX_TOPIC];
	size_t topiclen;
	uint64_t next; /* the next frame's counter */
	int open;      /* 0 before a handshake and once the counter is used up */
};

/* tel_valid_device reports whether dev (n bytes) may name a device: 1 to 64 bytes of
 * A-Z a-z 0-9 . _ - (returns 0 if so, -1 otherwise). */
int tel_valid_device(const char *dev, size_t n);

/* tel_pin_key checks ek (FIPS 203's modulus check) and stores it with its hash; -1 if the
 * key is not a valid ML-KEM-512 encapsulation key. */
int tel_pin_key(struct tel_pin *p, const uint8_t ek[TEL_EK]);

/* tel_encaps is step 1 of the handshake: ML-KEM-512 Encaps(ek; m) into the handshake
 * payload hs (version, mode, ct) and the shared secret ss. */
int tel_encaps(uint8_t hs[TEL_HS], uint8_t ss[32], const struct tel_pin *p, const uint8_t m[32]);

/* tel_derive is steps 2 and 4: sid = H(ct)[0..8) and the session keys from
 * Ascon-CXOF128 (TELEMETRY.md section 5); the session's counter starts at 0. -1 on a bad
 * device id or psk. */
int tel_derive(struct tel_session *s, const struct tel_pin *p, const uint8_t hs[TEL_HS],
	       const uint8_t ss[32], const char *dev, size_t devlen, const uint8_t *psk, size_t psklen);

/* tel_fs_request writes the key request rq = version || nonce. */
void tel_fs_request(uint8_t rq[TEL_RQ], const uint8_t nonce[TEL_NONCE]);

/* tel_fs_verify is the signature check of step 3: ML-DSA-44 Verify under the pinned key sigpk
 * with context "pqrepro/tm/v1 ephemeral key" of M = u8 len(dev) || dev || n || u64be expiry
 * || ek_e, taken from the offer (n bytes). TEL_OFFER_OK, TEL_OFFER_MALFORMED (length,
 * version, device id) or TEL_OFFER_SIGNATURE. */
int tel_fs_verify(const uint8_t *offer, size_t n, const uint8_t sigpk[TEL_SIGPK], const char *dev,
		  size_t devlen);

/* tel_fs_accept is the rest of step 3 on a verified offer: its nonce must equal the request's
 * (TEL_OFFER_NONCE), now < expiry <= now + 600 s (TEL_OFFER_EXPIRED; now in Unix seconds), and
 * ek_e must pass the modulus check (TEL_OFFER_MALFORMED); then eph holds ek_e and its hash
 * and *expiry the offer's expiry. */
int tel_fs_accept(struct tel_pin *eph, uint64_t *expiry, const uint8_t offer[TEL_OFFER],
		  const uint8_t nonce[TEL_NONCE], uint64_t now);

/* tel_fs_encaps encapsulates to the accepted ephemeral key: hs = version || 2 || nonce || ct. */
int tel_fs_encaps(uint8_t hs[TEL_HS_FS], uint8_t ss[32], const struct tel_pin *eph,
		  const uint8_t nonce[TEL_NONCE], const uint8_t m[32]);

/* tel_derive_fs is tel_derive for a forward-secret handshake hs: mode 2, H(ek_e), and
 * nonce || u64be expiry appended to the key-derivation input. */
int tel_derive_fs(struct tel_session *s, const struct tel_pin *eph, const uint8_t hs[TEL_HS_FS],
		  const uint8_t ss[32], uint64_t expiry, const char *dev, size_t devlen,
		  const uint8_t *psk, size_t psklen);

/* tel_seal writes the frame u64be counter || C || tag (plen + 24 bytes) for plaintext p
 * under the session's next counter, which it then advances; *ctr is the counter used.
 * p may be frame + 8 (sealing in place). -1 (nothing written) when the session is not open
 * or plen exceeds TEL_MAX_PAYLOAD; the session closes after counter 2^64 - 2. */
int tel_seal(struct tel_session *s, uint8_t *frame, const uint8_t *p, size_t plen, uint64_t *ctr);

#endif
