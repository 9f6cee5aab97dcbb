package wire

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// userHZ is the unit of the CPU times in /proc/<pid>/stat: USER_HZ, 100 on every Linux ABI.
const userHZ = 100

// ProcessActivity is Options.Activity for a board that is a local process (an emulator): see
// procActivity. The process must be the caller's child or otherwise visible in /proc.
func ProcessActivity(pid int) func() (Activity, error) {
	return func() (Activity, error) { return procActivity(pid) }
}

// procActivity reads how an emulator process is doing from /proc: its CPU time (all
// threads, from schedstat in ns where the kernel keeps it, else stat's ticks), whether it is stopped by a signal, and whether any of its
// threads is running or waiting for a CPU. This is the board's liveness for wire.Conn: the
// guest's instructions are the emulator's CPU time under -icount, and a starved or stopped
// emulator is not a silent board.
func procActivity(pid int) (Activity, error) {
	state, cpu, err := readStat(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return Activity{}, err
	}
	if state == 'Z' || state == 'X' {
		return Activity{}, fmt.Errorf("process %d has exited", pid)
	}
	a := Activity{Work: cpu, Paused: state == 'T' || state == 't'}
	// Each thread's schedstat has its time on a CPU in nanoseconds (stat's is in 10 ms
	// ticks, too coarse to tell a short busy spell from an idle one); stat's state says
	// whether it runs or waits for a CPU.
	var ns time.Duration
	schedOK := true
	tasks, _ := filepath.Glob(filepath.Join("/proc", strconv.Itoa(pid), "task", "*"))
	for _, t := range tasks {
		if st, _, err := readStat(filepath.Join(t, "stat")); err == nil && st == 'R' {
			a.Runnable = true
		}
		if d, err := readSchedstat(filepath.Join(t, "schedstat")); err == nil {
			ns += d
		} else {
			schedOK = false
		}
	}
	if schedOK && len(tasks) > 0 {
		a.Work = ns
	}
	return a, nil
}

// readSchedstat reads the first field of a /proc schedstat file: time spent on a CPU, in ns.
func readSchedstat(path string) (time.Duration, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	f := strings.Fields(string(b))
	if len(f) < 1 {
		return 0, fmt.Errorf("%s: empty", path)
	}
	v, err := strconv.ParseUint(f[0], 10, 63)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	return time.Duration(v), nil
}

// readStat parses the state and utime+stime of a /proc stat file. The command name (field
// 2) is in parentheses and may hold spaces, so fields are counted after its last ')'.
func readStat(path string) (state byte, cpu time.Duration, err error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, 0, fmt.Errorf("read %s: %w", path, err)
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, 0, fmt.Errorf("%s: no command name", path)
	}
	f := strings.Fields(s[i+1:])
	// After the name: state (3), ppid, pgrp, session, tty_nr, tpgid, flags, minflt, cminflt,
	// majflt, cmajflt, utime (14), stime (15).
	if len(f) < 13 || len(f[0]) != 1 {
		return 0, 0, fmt.Errorf("%s: %d fields after the command name", path, len(f))
	}
	ut, err1 := strconv.ParseUint(f[11], 10, 64)
	st, err2 := strconv.ParseUint(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, 0, fmt.Errorf("%s: utime %q stime %q", path, f[11], f[12])
	}
	return f[0][0], time.Duration(ut+st) * time.Second / userHZ, nil
}
