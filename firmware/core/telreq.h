/* The telemetry device's requests (firmware/PROTOCOL.md, "Telemetry device"): TELEK,
 * TELHS, TELSEAL and AEADBENCH. A board whose table has no signature scheme (the 16 KiB
 * qemu-microbit) has no Ascon and answers them ERROR code=unknown. */
#ifndef FW_TELREQ_H
#define FW_TELREQ_H

#include "algs.h"
#include "proto.h"

/* A board with signature schemes has the device unless its flags say -DFW_HAVE_TEL=0 (the
 * rp2040js Pico W's TLS image, whose RAM holds the TLS client instead). */
#ifndef FW_HAVE_TEL
#define FW_HAVE_TEL FW_HAVE_SIG
#endif

/* fw_tel_dispatch runs r if it is one of the telemetry requests and returns 1; 0 if not. */
int fw_tel_dispatch(const struct fw_req *r);

#endif
