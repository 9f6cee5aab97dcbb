// Package durable makes file system changes survive a crash: a directory is synced after the
// renames and creations in it, on systems that support syncing a directory.
package durable

import (
	"errors"
	"fmt"
	"os"
)

// SyncDir fsyncs a directory so renames and creations in it are durable.
// File systems that cannot sync directories are tolerated.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, os.ErrInvalid) && !errors.Is(err, errors.ErrUnsupported) {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	return nil
}
