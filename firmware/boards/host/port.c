/* Host port: the firmware core on the build machine, speaking the protocol on
 * stdin/stdout. Used by the Go tests to exercise the same core the boards
 * run. The counter is CLOCK_MONOTONIC in nanoseconds; the stack high-water
 * mark is measured on a dedicated painted stack entered with swapcontext. */
#define _GNU_SOURCE
#include <elf.h>
#include <link.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include "../../core/fw.h"

const struct fw_board fw_board_info = {
	.board = "host",
	.chip = "host",
	.clock_hz = 0,
	.counter = "clock_monotonic",
	.unit = "ns",
	.resolution = 1,
};

/* Set when stdin reaches end of file; the firmware exits once idle. */
static int input_closed;

void plat_init(void) {}

int plat_getc(void)
{
	struct pollfd p = {0, POLLIN, 0};
	unsigned char c;
	ssize_t n;
	if (input_closed || poll(&p, 1, 0) <= 0)
		return -1;
	n = read(0, &c, 1);
	if (n <= 0) {
		input_closed = 1;
		return -1;
	}
	return c;
}

void plat_write(const char *s, size_t n)
{
	while (n > 0) {
		ssize_t w = write(1, s, n);
		if (w <= 0)
			exit(1);
		s += w;
		n -= (size_t)w;
	}
}

void plat_idle(void)
{
	struct pollfd p = {0, POLLIN, 0};
	if (input_closed)
		exit(0);
	poll(&p, 1, 100);
}

void plat_counter_align(void) {}

void plat_timed_end(void) {}

uint64_t plat_counter(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

#define STACK_WORDS (256 * 1024 / 4)
#define PAINT 0x5AA5C33Cu
static uint32_t job_stack[STACK_WORDS];
static ucontext_t main_ctx, job_ctx;
static void (*job_fn)(void *);
static void *job_arg;

static void job_trampoline(void) { job_fn(job_arg); }

/* The host build has no marker output: LOOP's toggles do nothing. */
void plat_marker(int on)
{
	(void)on;
}

uint32_t plat_stack_run(void (*fn)(void *), void *arg)
{
	size_t i;
	for (i = 0; i < STACK_WORDS; i++)
		job_stack[i] = PAINT;
	job_fn = fn;
	job_arg = arg;
	getcontext(&job_ctx);
	job_ctx.uc_stack.ss_sp = job_stack;
	job_ctx.uc_stack.ss_size = sizeof job_stack;
	job_ctx.uc_link = &main_ctx;
	makecontext(&job_ctx, job_trampoline, 0);
	swapcontext(&main_ctx, &job_ctx);
	for (i = 0; i < STACK_WORDS && job_stack[i] == PAINT; i++)
		;
	return (uint32_t)((STACK_WORDS - i) * 4);
}

struct note_search {
	const uint8_t *id;
	size_t len;
};

static int find_build_id(struct dl_phdr_info *info, size_t size, void *data)
{
	struct note_search *s = data;
	int i;
	(void)size;
	if (info->dlpi_name != NULL && info->dlpi_name[0] != 0)
		return 0; /* only the main program */
	for (i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		const uint8_t *p, *end;
		if (ph->p_type != PT_NOTE)
			continue;
		p = (const uint8_t *)(info->dlpi_addr + ph->p_vaddr);
		end = p + ph->p_memsz;
		while (p + sizeof(ElfW(Nhdr)) <= end) {
			const ElfW(Nhdr) *nh = (const ElfW(Nhdr) *)p;
			const uint8_t *name = p + sizeof *nh;
			const uint8_t *desc = name + ((nh->n_namesz + 3) & ~3u);
			if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 && memcmp(name, "GNU", 4) == 0) {
				s->id = desc;
				s->len = nh->n_descsz;
				return 1;
			}
			p = desc + ((nh->n_descsz + 3) & ~3u);
		}
	}
	return 0;
}

size_t plat_build_id(const uint8_t **id)
{
	struct note_search s = {NULL, 0};
	dl_iterate_phdr(find_build_id, &s);
	*id = s.id;
	return s.len;
}

int main(void)
{
	fw_main();
	return 0;
}
