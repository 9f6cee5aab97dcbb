/* Entry for the riscv32 virt port: stack, zeroed .bss, then fw_main.
 * Only hart 0 runs; others (if any) park. */
	.section .text.start, "ax"
	.globl _start
_start:
	csrr	t0, mhartid
	bnez	t0, park
	la	sp, __stack_top
	la	t0, __bss_start
	la	t1, __bss_end
1:	bgeu	t0, t1, 2f
	sw	zero, 0(t0)
	addi	t0, t0, 4
	j	1b
2:	call	fw_main
park:	wfi
	j	park
