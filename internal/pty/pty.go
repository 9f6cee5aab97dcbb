// Package pty allocates Linux pseudo-terminals (/dev/ptmx): the runner's end of an emulated
// board's UART, and the stand-in serial ports of tests and simulators.
package pty

import (
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// Open allocates a pty pair. It returns the master, opened non-blocking (deadlines work, and
// Close ends a blocked Read), and the path of the slave, whose line discipline is set raw with
// no output processing (no \n to \r\n), so bytes cross it unchanged in both directions. The
// settings belong to the pty and hold for whoever opens the slave later, as long as the
// master stays open.
func Open() (master *os.File, path string, err error) {
	master, err = os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		return nil, "", fmt.Errorf("open /dev/ptmx: %w", err)
	}
	path, err = unlock(master)
	if err == nil {
		err = setRaw(path)
	}
	if err != nil {
		master.Close()
		return nil, "", err
	}
	return master, path, nil
}

// unlock unlocks the slave of master and returns its path.
func unlock(master *os.File) (string, error) {
	rc, err := master.SyscallConn()
	if err != nil {
		return "", err
	}
	var n uint32
	var ioErr error
	err = rc.Control(func(fd uintptr) {
		if ioErr = unix.IoctlSetPointerInt(int(fd), unix.TIOCSPTLCK, 0); ioErr != nil {
			ioErr = fmt.Errorf("unlock pty: %w", ioErr)
			return
		}
		if n, ioErr = unix.IoctlGetUint32(int(fd), unix.TIOCGPTN); ioErr != nil {
			ioErr = fmt.Errorf("pty number: %w", ioErr)
		}
	})
	if err == nil {
		err = ioErr
	}
	return "/dev/pts/" + strconv.FormatUint(uint64(n), 10), err
}

// setRaw opens the slave once and sets its termios: cfmakeraw's settings, and ONLCR, OCRNL
// cleared too (a program that opens it and sets OPOST again, as QEMU's serial backend does,
// then still gets no translation).
func setRaw(path string) error {
	s, err := os.OpenFile(path, os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		return fmt.Errorf("pty %s: %w", path, err)
	}
	defer s.Close()
	fd := int(s.Fd())
	t, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	if err != nil {
		return fmt.Errorf("pty %s: %w", path, err)
	}
	t.Iflag &^= unix.IGNBRK | unix.BRKINT | unix.PARMRK | unix.ISTRIP | unix.INLCR | unix.IGNCR | unix.ICRNL | unix.IXON
	t.Oflag &^= unix.OPOST | unix.ONLCR | unix.OCRNL | unix.ONOCR | unix.ONLRET
	t.Lflag &^= unix.ECHO | unix.ECHONL | unix.ICANON | unix.ISIG | unix.IEXTEN
	t.Cflag &^= unix.CSIZE | unix.PARENB
	t.Cflag |= unix.CS8
	t.Cc[unix.VMIN], t.Cc[unix.VTIME] = 1, 0
	if err := unix.IoctlSetTermios(fd, unix.TCSETS, t); err != nil {
		return fmt.Errorf("pty %s: %w", path, err)
	}
	return nil
}
