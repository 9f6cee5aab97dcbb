package portal

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"pqrepro/portal/sqlstore"
	"time"
)

// Names in the data directory.
const (
	// DatabaseFile is the SQLite database's file and BlobsDir the folder of stored files.
	DatabaseFile = "portal.db"
	BlobsDir     = "blobs"
	dbFile       = DatabaseFile
	blobsDir     = BlobsDir
	runMarker    = "portal.running"
)

// quickCheckBelow is the database size under which PRAGMA quick_check runs on every start:
// it costs little there. Larger databases are checked after an unclean shutdown or when
// Config.Check asks.
const quickCheckBelow = 64 << 20

// shared reports whether other portal processes may share the store (PostgreSQL).
func (s *Server) shared() bool { return s.cfg.Database != "" }

// checkDatabase runs PRAGMA quick_check when the last run did not shut down cleanly (its
// marker file is still there), when force asks, or when the database is small; a failed
// check refuses to start. It then writes the marker, which Close removes.
func checkDatabase(ctx context.Context, dir string, st *sqlstore.DB, force bool, log *slog.Logger) error {
	marker := filepath.Join(dir, runMarker)
	_, merr := os.Stat(marker)
	unclean := merr == nil
	var size int64
	if fi, err := os.Stat(filepath.Join(dir, dbFile)); err == nil {
		size = fi.Size()
	}
	if force || unclean || size < quickCheckBelow {
		why := "the database is small"
		switch {
		case force:
			why = "--check was given"
		case unclean:
			why = "the last run did not shut down cleanly (" + runMarker + " was left behind)"
		}
		start := time.Now()
		if err := st.QuickCheck(ctx); err != nil {
			return fmt.Errorf("database %s is damaged (%s; checked because %s): restore it from a backup", filepath.Join(dir, dbFile), err, why)
		}
		log.Info("database checked", "check", "quick_check", "reason", why, "bytes", size, "took", time.Since(start).Round(time.Millisecond))
	}
	if err := os.WriteFile(marker, []byte(fmt.Sprintf("pid %d since %s\n", os.Getpid(), time.Now().UTC().Format(time.RFC3339))), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", marker, err)
	}
	return nil
}
