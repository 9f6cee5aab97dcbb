/* The Raspberry Pi family (pico-w: RP2040, Cortex-M0+; pico2-w: RP2350, Cortex-M33 in the
 * Arm Secure state), one unit compiled per board with the board's macros (rp.h): clocks,
 * the UART0 console, the counter, the vector table and reset. The board's port.c says what
 * HELLO reports (fw_board_info).
 *
 * Clocks. The project configures them itself (no SDK): the 12 MHz crystal (XOSC) drives
 * clk_ref; PLL_SYS runs its VCO at 1500 MHz (FBDIV 125) and divides it to 125 MHz on the
 * RP2040 (POSTDIV 6 x 2) or 150 MHz on the RP2350 (5 x 2), the chips' nominal clocks;
 * clk_sys and clk_peri (the UART's clock) take it. The TIMER's microsecond tick is made
 * from clk_ref (12 cycles). Nothing here has been measured on silicon (docs/BOARDS.md).
 *
 * Console: UART0 on GPIO0 (TX) and GPIO1 (RX), 115200 8N1, FIFOs on, received by the RX
 * and RX-timeout interrupts into a ring. The Pico W's USB is not used (no USB-CDC).
 *
 * Marker: GPIO2 (RP_MARKER_GPIO), a single-cycle IO output, low except while LOOP's timed
 * call runs (plat_marker), so a power meter's logic input sees each operation.
 *
 * Counter: cycles of clk_sys. The RP2040's Cortex-M0+ has no DWT cycle counter, so SysTick
 * on the processor clock counts them (24 bits, extended to 64 by its wrap interrupt); the
 * RP2350's Cortex-M33 has DWT CYCCNT (32 bits), extended to 64 by the same SysTick wrap
 * interrupt noticing when it went round. The 64-bit microsecond TIMER runs beside them:
 * at boot the port measures clk_sys against it and prints the result (clock_report); HELLO
 * reports the counter only. Under an emulator (the
 * pico-w test runs rp2040js) the counts are the emulator's notion of cycles, not the
 * chip's: only on a real board are they cycles.
 *
 * Code runs from SRAM: the reset handler copies .text (and .data) there, so the XIP cache
 * and flash timing never enter a measurement; read-only data (tables, the self-test's
 * vectors) stays in flash. */
#include "rp.h"

#include <stdint.h>

#include "../../core/fw.h"
#include "../baremetal/rxring.h"

#define REG(a) (*(volatile uint32_t *)(a))
#define SET(a) REG((a) + 0x2000u) /* atomic set alias */
#define CLR(a) REG((a) + 0x3000u) /* atomic clear alias */

#if RP2350
#define RESETS_BASE 0x40020000u
#define RST_IO_BANK0 (1u << 6)
#define RST_PADS_BANK0 (1u << 9)
#define RST_PLL_SYS (1u << 14)
#define RST_TIMER (1u << 23)
#define RST_UART0 (1u << 26)
#define CLOCKS_BASE 0x40010000u
#define XOSC_BASE 0x40048000u
#define PLL_SYS_BASE 0x40050000u
#define IO_BANK0_BASE 0x40028000u
#define PADS_BANK0_BASE 0x40038000u
#define UART0_BASE 0x40070000u
#define TIMER_BASE 0x400b0000u
#define TICKS_BASE 0x40108000u
#define UART0_IRQ 33u
#define PLL_POSTDIV1 5u
#else
#define RESETS_BASE 0x4000c000u
#define RST_IO_BANK0 (1u << 5)
#define RST_PADS_BANK0 (1u << 8)
#define RST_PLL_SYS (1u << 12)
#define RST_TIMER (1u << 21)
#define RST_UART0 (1u << 22)
#define CLOCKS_BASE 0x40008000u
#define XOSC_BASE 0x40024000u
#define PLL_SYS_BASE 0x40028000u
#define IO_BANK0_BASE 0x40014000u
#define PADS_BANK0_BASE 0x4001c000u
#define UART0_BASE 0x40034000u
#define TIMER_BASE 0x40054000u
#define WATCHDOG_BASE 0x40058000u
#define UART0_IRQ 20u
#define PLL_POSTDIV1 6u
#endif

#define RESETS_RESET (RESETS_BASE + 0x0u)
#define RESETS_DONE REG(RESETS_BASE + 0x8u)

#define XOSC_CTRL REG(XOSC_BASE + 0x00u)
#define XOSC_STATUS REG(XOSC_BASE + 0x04u)
#define XOSC_STARTUP REG(XOSC_BASE + 0x0cu)

#define PLL_CS REG(PLL_SYS_BASE + 0x0u)
#define PLL_PWR (PLL_SYS_BASE + 0x4u)
#define PLL_FBDIV_INT REG(PLL_SYS_BASE + 0x8u)
#define PLL_PRIM REG(PLL_SYS_BASE + 0xcu)

#define CLK_REF_CTRL REG(CLOCKS_BASE + 0x30u)
#define CLK_REF_DIV REG(CLOCKS_BASE + 0x34u)
#define CLK_REF_SELECTED REG(CLOCKS_BASE + 0x38u)
#define CLK_SYS_CTRL REG(CLOCKS_BASE + 0x3cu)
#define CLK_SYS_SELECTED REG(CLOCKS_BASE + 0x44u)
#define CLK_PERI_CTRL REG(CLOCKS_BASE + 0x48u)

#define GPIO_CTRL(n) REG(IO_BANK0_BASE + 0x04u + 8u * (n))
#define PADS_GPIO(n) REG(PADS_BANK0_BASE + 0x04u + 4u * (n))

/* SIO's GPIO output and output-enable registers (set and clear aliases of their own). */
#define SIO_BASE 0xd0000000u
#if RP2350
#define SIO_GPIO_OUT_SET REG(SIO_BASE + 0x018u)
#define SIO_GPIO_OUT_CLR REG(SIO_BASE + 0x020u)
#define SIO_GPIO_OE_SET REG(SIO_BASE + 0x038u)
#else
#define SIO_GPIO_OUT_SET REG(SIO_BASE + 0x014u)
#define SIO_GPIO_OUT_CLR REG(SIO_BASE + 0x018u)
#define SIO_GPIO_OE_SET REG(SIO_BASE + 0x024u)
#endif
#define GPIO_FUNC_SIO 5u

#define UART_DR REG(UART0_BASE + 0x00u)
#define UART_FR REG(UART0_BASE + 0x18u) /* bit4 RXFE, bit5 TXFF */
#define UART_IBRD REG(UART0_BASE + 0x24u)
#define UART_FBRD REG(UART0_BASE + 0x28u)
#define UART_LCR_H REG(UART0_BASE + 0x2cu)
#define UART_CR REG(UART0_BASE + 0x30u)
#define UART_IMSC REG(UART0_BASE + 0x38u)
#define UART_ICR REG(UART0_BASE + 0x44u)
#define UART_RXIM (1u << 4)
#define UART_RTIM (1u << 6)

#define TIMER_RAWH REG(TIMER_BASE + 0x24u)
#define TIMER_RAWL REG(TIMER_BASE + 0x28u)

#define NVIC_ISER(n) REG(0xE000E100u + 4u * (n))
#define NVIC_ICER(n) REG(0xE000E180u + 4u * (n))
#define UART_IRQ_WORD (UART0_IRQ / 32u)
#define UART_IRQ_BIT (1u << (UART0_IRQ % 32u))

#define SYST_CSR REG(0xE000E010u)
#define SYST_RVR REG(0xE000E014u)
#define SYST_CVR REG(0xE000E018u)
#define SYST_RELOAD 0x00FFFFFFu
#define ICSR REG(0xE000ED04u)

#if RP2350
#define DEMCR REG(0xE000EDFCu)
#define DWT_CTRL REG(0xE0001000u)
#define DWT_CYCCNT REG(0xE0001004u)
#endif

#define SYS_HZ RP_SYS_HZ

static void unreset(uint32_t bits)
{
	CLR(RESETS_RESET) = bits;
	while ((RESETS_DONE & bits) != bits)
		;
}

/* clocks_init: XOSC on, clk_ref from it, PLL_SYS to SYS_HZ, clk_sys and clk_peri from it. */
static void clocks_init(void)
{
	XOSC_CTRL = 0xaa0u;         /* FREQ_RANGE 1-15 MHz */
	XOSC_STARTUP = 47u;         /* (12 MHz / 1000 + 128) / 256: about 1 ms */
	SET(XOSC_BASE + 0x00u) = 0xfabu << 12; /* ENABLE */
	while (!(XOSC_STATUS & (1u << 31)))
		;

	/* clk_sys onto clk_ref (glitchless) before anything under it changes. */
	CLK_SYS_CTRL &= ~1u;
	while (!(CLK_SYS_SELECTED & 1u))
		;
	CLK_REF_CTRL = 2u; /* XOSC */
	while (!(CLK_REF_SELECTED & (1u << 2)))
		;
	CLK_REF_DIV = 1u << 8;

	/* PLL_SYS: reference 12 MHz / 1, VCO 12 MHz x 125 = 1500 MHz, / (POSTDIV1 x 2). */
	SET(RESETS_RESET) = RST_PLL_SYS;
	unreset(RST_PLL_SYS);
	PLL_CS = 1u;
	PLL_FBDIV_INT = 125u;
	CLR(PLL_PWR) = (1u << 0) | (1u << 5); /* PD, VCOPD */
	while (!(PLL_CS & (1u << 31)))
		;
	PLL_PRIM = (PLL_POSTDIV1 << 16) | (2u << 12);
	CLR(PLL_PWR) = 1u << 3; /* POSTDIVPD */

	/* clk_sys: AUXSRC pll_sys (0) while on clk_ref, then SRC aux; its divider stays at
	 * its reset value, 1. */
	CLK_SYS_CTRL = 0u;
	CLK_SYS_CTRL = 1u;
	while (!(CLK_SYS_SELECTED & (1u << 1)))
		;
	/* clk_peri: enabled, AUXSRC clk_sys (0). */
	CLK_PERI_CTRL = 1u << 11;

	/* The TIMER's tick: 1 us from the 12 MHz clk_ref. */
#if RP2350
	REG(TICKS_BASE + 0x18u) = 0u;  /* TIMER0 CTRL: stopped while CYCLES changes */
	REG(TICKS_BASE + 0x1cu) = 12u; /* TIMER0 CYCLES */
	REG(TICKS_BASE + 0x18u) = 1u;  /* TIMER0 CTRL: ENABLE */
#else
	REG(WATCHDOG_BASE + 0x2cu) = (1u << 9) | 12u; /* TICK: ENABLE, CYCLES 12 */
#endif
}

static volatile uint32_t systick_wraps;
#if RP2350
static volatile uint32_t cyc_last, cyc_hi;

/* cyc_update folds a CYCCNT reading into the 64-bit count: called at least once per
 * 2^24 cycles (SysTick's wrap), far more often than CYCCNT's 2^32. */
static uint64_t cyc_update(void)
{
	uint32_t v = DWT_CYCCNT;
	if (v < cyc_last)
		cyc_hi++;
	cyc_last = v;
	return (uint64_t)cyc_hi << 32 | v;
}
#endif

/* Keep-alive (firmware/PROTOCOL.md, "Silence"): a runner that sees a real board only through
 * its UART cannot tell a long operation from a hung board, so while a timed region runs the
 * wrap interrupt sends the line "~alive" every KEEPALIVE_WRAPS wraps (2^27 cycles: 1.07 s at
 * 125 MHz, 0.89 s at 150 MHz). The main loop writes nothing inside a timed region, so the 7
 * bytes go into an empty 32-byte TX FIFO and never split a frame. Its cost lands in the
 * count of operations longer than one wrap (none shorter sees a wrap: the phase is restarted
 * at plat_counter_align): the in_timed test on every wrap, and the seven FIFO writes on
 * every eighth (docs/BOARDS.md gives the cycles). */
#ifndef KEEPALIVE_WRAPS
#define KEEPALIVE_WRAPS 8u /* 0: no keep-alive (to measure what it costs) */
#endif
static volatile uint32_t in_timed, timed_wraps;

void SysTick_Handler(void)
{
	systick_wraps++;
#if RP2350
	cyc_update();
#endif
	/* Counted from the region's start, so a keep-alive falls at the same point of every run
	 * of the same operation and counts stay exactly repeatable. */
#if KEEPALIVE_WRAPS
	if (in_timed && ++timed_wraps % KEEPALIVE_WRAPS == 0u) {
		static const char ka[] = "~alive\n";
		unsigned int i;
		for (i = 0; i < sizeof ka - 1u && !(UART_FR & (1u << 5)); i++)
			UART_DR = (uint8_t)ka[i];
	}
#endif
}

void UART0_Handler(void)
{
	while (!(UART_FR & (1u << 4))) {
		uint8_t c = (uint8_t)(UART_DR & 0xFFu);
		rx_push(c);
	}
	UART_ICR = UART_RXIM | UART_RTIM;
}

static uint64_t plat_us(void);
static void clock_report(void);

/* marker_init makes the marker pin a SIO output, driven low. */
static void marker_init(void)
{
#if RP2350
	PADS_GPIO(RP_MARKER_GPIO) &= ~((1u << 8) | (1u << 7)); /* clear ISO and output disable */
#endif
	SIO_GPIO_OUT_CLR = 1u << RP_MARKER_GPIO;
	SIO_GPIO_OE_SET = 1u << RP_MARKER_GPIO;
	GPIO_CTRL(RP_MARKER_GPIO) = GPIO_FUNC_SIO;
}

void plat_marker(int on)
{
	if (on)
		SIO_GPIO_OUT_SET = 1u << RP_MARKER_GPIO;
	else
		SIO_GPIO_OUT_CLR = 1u << RP_MARKER_GPIO;
}

void plat_init(void)
{
	clocks_init();
	unreset(RST_IO_BANK0 | RST_PADS_BANK0 | RST_UART0 | RST_TIMER);

	/* GPIO0 = UART0 TX, GPIO1 = UART0 RX (function 2). */
#if RP2350
	PADS_GPIO(0) = (PADS_GPIO(0) & ~(1u << 8)) | (1u << 6); /* clear ISO, input enable */
	PADS_GPIO(1) = (PADS_GPIO(1) & ~((1u << 8) | (1u << 7))) | (1u << 6);
#endif
	GPIO_CTRL(0) = 2u;
	GPIO_CTRL(1) = 2u;
	marker_init();

	/* 115200 baud from clk_peri: divisor clk/(16 baud) in 16.6 fixed point. */
	{
		uint32_t div = (8u * SYS_HZ) / 115200u;
		UART_IBRD = div >> 7;
		UART_FBRD = ((div & 0x7fu) + 1u) / 2u;
	}
	UART_LCR_H = (3u << 5) | (1u << 4); /* 8 bits, FIFOs on (written after the divisor) */
	UART_CR = (1u << 0) | (1u << 8) | (1u << 9); /* UARTEN, TXE, RXE */
	UART_IMSC = UART_RXIM | UART_RTIM;

#if RP2350
	DEMCR |= 1u << 24; /* TRCENA */
	DWT_CYCCNT = 0;
	DWT_CTRL |= 1u; /* CYCCNTENA */
#endif
	SYST_RVR = SYST_RELOAD;
	SYST_CVR = 0;
	SYST_CSR = 7; /* enable, interrupt, processor clock */
	NVIC_ISER(UART_IRQ_WORD) = UART_IRQ_BIT;
	clock_report();
}

int plat_getc(void) { return rx_take(); }

void plat_write(const char *s, size_t n)
{
	while (n--) {
		while (UART_FR & (1u << 5))
			;
		UART_DR = (uint8_t)*s++;
	}
}

void plat_idle(void)
{
	__asm__ volatile("cpsid i" ::: "memory");
	if (rx_empty())
		__asm__ volatile("dsb\n\twfi" ::: "memory");
	__asm__ volatile("cpsie i" ::: "memory");
}

/* The UART interrupt is masked in the timed region; SysTick's wrap interrupt stays on (it
 * extends the count). Its phase is restarted here, as on the MPS2 boards: writing SYST_CVR
 * clears it and the reload comes a fixed number of cycles later, so the wrap interrupts
 * fall at the same points of every run of the same code, and a count does not depend on
 * how long the firmware waited for input before. */
void plat_counter_align(void)
{
	NVIC_ICER(UART_IRQ_WORD) = UART_IRQ_BIT;
	__asm__ volatile("dsb\n\tisb" ::: "memory");
	SYST_CVR = 0;
	while (SYST_CVR == 0)
		;
	timed_wraps = 0u;
	in_timed = 1u;
}

void plat_timed_end(void)
{
	in_timed = 0u;
	NVIC_ISER(UART_IRQ_WORD) = UART_IRQ_BIT;
}

uint64_t plat_counter(void)
{
#if RP2350
	uint64_t v;
	__asm__ volatile("cpsid i" ::: "memory");
	v = cyc_update();
	__asm__ volatile("cpsie i" ::: "memory");
	return v;
#else
	/* With interrupts masked, a wrap that has happened but whose handler has not yet run
	 * shows as a pending SysTick (ICSR.PENDSTSET); it belongs to this reading when the value
	 * read is from the new period (the upper half: the reload came before the read). */
	uint32_t w, v, pend;
	__asm__ volatile("cpsid i" ::: "memory");
	w = systick_wraps;
	v = SYST_CVR;
	pend = ICSR & (1u << 26);
	__asm__ volatile("cpsie i" ::: "memory");
	if (pend && v > SYST_RELOAD / 2u)
		w++;
	return (uint64_t)w * (SYST_RELOAD + 1u) + (SYST_RELOAD - v);
#endif
}

/* plat_us reads the 64-bit microsecond TIMER (the raw registers: high, low, high again). */
static uint64_t plat_us(void)
{
	uint32_t h, l;
	do {
		h = TIMER_RAWH;
		l = TIMER_RAWL;
	} while (h != TIMER_RAWH);
	return (uint64_t)h << 32 | l;
}

/* clock_report prints one plain (unframed) line at boot: clk_sys as the counter measures it
 * over 10,000 us of the TIMER (which counts clk_ref, the crystal, in microseconds), e.g.
 * "clk_sys 125000 kHz against the 1 us TIMER", so a board whose clock setup went wrong
 * says so before anything is measured. The runner keeps unframed lines in its log. */
static void clock_report(void)
{
	static const char pre[] = "clk_sys ", post[] = " kHz against the 1 us TIMER\n";
	char num[12];
	size_t n = sizeof num;
	uint64_t t0 = plat_us(), c0;
	uint32_t khz;
	while (plat_us() == t0)
		;
	t0 = plat_us();
	c0 = plat_counter();
	while (plat_us() - t0 < 10000u)
		;
	khz = (uint32_t)(plat_counter() - c0) / 10u;
	do {
		num[--n] = (char)('0' + khz % 10u);
		khz /= 10u;
	} while (khz != 0 && n > 0);
	plat_write(pre, sizeof pre - 1);
	plat_write(num + n, sizeof num - n);
	plat_write(post, sizeof post - 1);
}

/* ---- vector table and reset ---- */

extern uint32_t __stack_top[], __stack_limit[], __data_start[], __data_end[], __bss_start[], __bss_end[];
extern const uint32_t __data_load[];

void Reset_Handler(void);
static void Fault_Handler(void);

#define IRQ_DEFAULTS_8 Fault_Handler, Fault_Handler, Fault_Handler, Fault_Handler, \
	Fault_Handler, Fault_Handler, Fault_Handler, Fault_Handler
__attribute__((section(".vectors"), used)) static void (*const vectors[])(void) = {
	(void (*)(void))(uintptr_t)__stack_top,
	Reset_Handler,
	Fault_Handler, /* NMI */
	Fault_Handler, /* HardFault */
	Fault_Handler, /* MemManage (Armv8-M) */
	Fault_Handler, /* BusFault (Armv8-M) */
	Fault_Handler, /* UsageFault (Armv8-M) */
	Fault_Handler, /* SecureFault (Armv8-M) */
	0, 0, 0,
	Fault_Handler, /* SVCall */
	Fault_Handler, /* DebugMon (Armv8-M) */
	0,
	Fault_Handler, /* PendSV */
	SysTick_Handler,
	/* every external interrupt below the UART's */
	IRQ_DEFAULTS_8, IRQ_DEFAULTS_8,
#if UART0_IRQ == 33
	IRQ_DEFAULTS_8, IRQ_DEFAULTS_8, Fault_Handler,
#elif UART0_IRQ == 20
	Fault_Handler, Fault_Handler, Fault_Handler, Fault_Handler,
#else
#error "list the interrupts below the UART's"
#endif
	UART0_Handler,
};
_Static_assert(sizeof vectors / sizeof vectors[0] == 16 + UART0_IRQ + 1, "vector table");

static void Fault_Handler(void)
{
	static const char msg[] = "\nFAULT\n";
	plat_write(msg, sizeof msg - 1);
	for (;;)
		;
}

/* Reset_Handler runs from flash (section .reset): it copies the code and data images to
 * SRAM before anything in them is called, so its loops must stay loops (memcpy and memset
 * are in SRAM, not there yet): GCC is told not to turn them into calls. */
__attribute__((section(".reset"), optimize("no-tree-loop-distribute-patterns"))) void Reset_Handler(void)
{
	uint32_t *d = __data_start;
	const uint32_t *s = __data_load;
#if RP2350
	/* The stack sits at the bottom of SRAM, but below SRAM is the XIP window, where a
	 * runaway stack would not fault: the M33's stack limit makes an overflow a fault. (The
	 * RP2040's M0+ has no stack limit register; its painted marks stay far below 32 KiB.) */
	__asm__ volatile("msr msplim, %0" ::"r"(__stack_limit));
#endif
	while (d < __data_end)
		*d++ = *s++;
	for (d = __bss_start; d < __bss_end; d++)
		*d = 0;
	/* fw_main is in SRAM, beyond a BL's reach from flash: call it through a register. */
	{
		void (*volatile main_in_ram)(void) = fw_main;
		main_in_ram();
	}
	for (;;)
		;
}
