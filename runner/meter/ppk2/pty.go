package ppk2

import (
	"fmt"
	"os"
	"pqrepro/internal/pty"
	"syscall"
)

// openPty allocates a pseudo-terminal: the master (non-blocking, so Close ends a blocked
// Read), the slave's path, and one slave descriptor in raw mode that the simulator keeps open
// so that the line does not hang up while the driver opens and closes it.
func openPty() (master *os.File, path string, hold *os.File, err error) {
	master, path, err = pty.Open()
	if err != nil {
		return nil, "", nil, err
	}
	hold, err = os.OpenFile(path, os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		master.Close()
		return nil, "", nil, fmt.Errorf("pty %s: %w", path, err)
	}
	return master, path, hold, nil
}
