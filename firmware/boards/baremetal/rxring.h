/* The receive ring of the bare-metal ports: the UART interrupt handler pushes every byte it
 * reads (rx_push), plat_getc takes them (rx_take), plat_idle sleeps only while the ring is
 * empty (rx_empty). The handler is the only writer of rx_head and rx_take the only writer
 * of rx_tail, so neither needs a lock. A byte that finds the ring full is dropped (counted
 * in rx_dropped); the protocol recovers lost bytes by retrying.
 *
 * One translation unit of a board includes this (its storage is static); RX_RING, the size
 * in bytes, may be defined before (default 1024). */
#ifndef FW_RXRING_H
#define FW_RXRING_H

#include <stdint.h>

#ifndef RX_RING
#define RX_RING 1024u
#endif

static uint8_t rx_ring[RX_RING];
static volatile uint32_t rx_head, rx_tail, rx_dropped;

static inline void rx_push(uint8_t c)
{
	uint32_t h = rx_head;
	if (h - rx_tail < RX_RING) {
		rx_ring[h % RX_RING] = c;
		rx_head = h + 1u;
	} else {
		rx_dropped++;
	}
}

/* rx_take returns the oldest byte received, or -1 at once if none is waiting. */
static inline int rx_take(void)
{
	uint32_t t = rx_tail;
	int c;
	if (t == rx_head)
		return -1;
	c = rx_ring[t % RX_RING];
	rx_tail = t + 1u;
	return c;
}

static inline int rx_empty(void) { return rx_head == rx_tail; }

#endif
