/* The board's TLS 1.3 client over the serial line (firmware/PROTOCOL.md, "TLS over the serial
 * line"): TLSCA, TLS io=serial and TLSIN. Built in when the board's flags set FW_HAVE_TLS
 * (qemu-mps2-an386, qemu-mps2-an505, qemu-riscv32-virt, with crypto/tls13 and its primitives
 * linked); elsewhere the three requests answer ERROR code=unknown. */
#ifndef FW_TLSREQ_H
#define FW_TLSREQ_H

#include "proto.h"

#ifndef FW_HAVE_TLS
#define FW_HAVE_TLS 0
#endif
/* FW_HAVE_TLS_SERVER adds the server role (TLSLEAF, TLSKEY, TLS role=server; crypto/tls13/
 * tls13s linked): the emulated boards; the Pico W's TLS image stays client-only. */
#ifndef FW_HAVE_TLS_SERVER
#define FW_HAVE_TLS_SERVER 0
#endif

/* fw_tls_dispatch runs r if it is one of the TLS requests and returns 1; 0 if not. */
int fw_tls_dispatch(const struct fw_req *r);

#endif
