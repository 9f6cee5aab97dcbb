package ppk2

import (
	"fmt"
	"os"
	"strconv"
	"syscall"
	"unsafe"

	"golang.org/x/term"
)

// openPty allocates a pseudo-terminal: the master (non-blocking, so Close ends a blocked
// Read), the slave's path, and one slave descriptor in raw mode that the simulator keeps open
// so that the line does not hang up while the driver opens and closes it.
func openPty() (master *os.File, path string, hold *os.File, err error) {
	master, err = os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		return nil, "", nil, fmt.Errorf("open /dev/ptmx: %w", err)
	}
	var n uint32
	var ioErr error
	rc, err := master.SyscallConn()
	if err == nil {
		err = rc.Control(func(fd uintptr) {
			var unlock int32
			if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, fd, syscall.TIOCSPTLCK, uintptr(unsafe.Pointer(&unlock))); e != 0 {
				ioErr = fmt.Errorf("unlock pty: %w", e)
				return
			}
			if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, fd, syscall.TIOCGPTN, uintptr(unsafe.Pointer(&n))); e != 0 {
				ioErr = fmt.Errorf("pty number: %w", e)
			}
		})
	}
	if err == nil {
		err = ioErr
	}
	if err != nil {
		master.Close()
		return nil, "", nil, err
	}
	path = "/dev/pts/" + strconv.Itoa(int(n))
	hold, err = os.OpenFile(path, os.O_RDWR|syscall.O_NOCTTY, 0)
	if err == nil {
		_, err = term.MakeRaw(int(hold.Fd()))
	}
	if err != nil {
		master.Close()
		if hold != nil {
			hold.Close()
		}
		return nil, "", nil, fmt.Errorf("pty %s: %w", path, err)
	}
	return master, path, hold, nil
}
