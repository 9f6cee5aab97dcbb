package portal

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"pqrepro/portal/postgres"
	"pqrepro/portal/sqlite"
	"pqrepro/portal/sqlstore"
	"pqrepro/portal/store"
	"time"
)

// Names in the data directory.
const (
	dbFile    = "portal.db"
	blobsDir  = "blobs"
	runMarker = "portal.running"
)

// quickCheckBelow is the database size under which PRAGMA quick_check runs on every start:
// it costs little there. Larger databases are checked after an unclean shutdown or when
// Config.Check asks.
const quickCheckBelow = 64 << 20

// sqliteHeader begins every SQLite 3 database file.
var sqliteHeader = []byte("SQLite format 3\x00")

// openStore opens the configured database: the SQLite file in the data directory (checked
// before and after opening, see checkDataDir and checkDatabase), or the PostgreSQL database
// of cfg.Database. It reports whether the database held a portal already (SQLite: the file
// had content; PostgreSQL: an administrator exists), for the check against orphaned blobs.
func openStore(ctx context.Context, cfg Config, log *slog.Logger) (*sqlstore.DB, bool, error) {
	if cfg.Database != "" {
		st, err := postgres.Open(ctx, cfg.Database)
		if err != nil {
			return nil, false, err
		}
		if cfg.Logs != (store.LogLimits{}) {
			st.Logs = cfg.Logs
		}
		if cfg.Now != nil {
			st.Now = cfg.Now
		}
		if err := st.QuickCheck(ctx); err != nil {
			st.Close()
			return nil, false, err
		}
		exists, err := st.HasAdmin(ctx)
		if err != nil {
			st.Close()
			return nil, false, err
		}
		if !exists && cfg.Blobs == "" && !cfg.Init {
			n, err := countFiles(filepath.Join(cfg.DataDir, blobsDir))
			if err != nil {
				st.Close()
				return nil, false, err
			}
			if n > 0 {
				st.Close()
				return nil, false, fmt.Errorf("database %s holds no portal yet, but %s holds %d stored files of an earlier database: "+
					"restore the database, or start with --init to begin a fresh database beside them", cfg.DatabaseLocation(), filepath.Join(cfg.DataDir, blobsDir), n)
			}
		}
		log.Info("database", "engine", "PostgreSQL", "at", cfg.DatabaseLocation())
		return st, exists, nil
	}
	exists, err := checkDataDir(cfg.DataDir, cfg.Init)
	if err != nil {
		return nil, false, err
	}
	st, err := sqlite.Open(ctx, filepath.Join(cfg.DataDir, dbFile))
	if err != nil {
		return nil, false, fmt.Errorf("%w (if the file is damaged, restore it from a backup)", err)
	}
	if err := checkDatabase(ctx, cfg.DataDir, st, cfg.Check, log); err != nil {
		st.Close()
		return nil, false, err
	}
	if cfg.Logs != (store.LogLimits{}) {
		st.Logs = cfg.Logs
	}
	if cfg.Now != nil {
		st.Now = cfg.Now
	}
	return st, exists, nil
}

// DatabaseLocation says where the database is, for people: the SQLite file's path, or the
// PostgreSQL URL without its password.
func (c Config) DatabaseLocation() string {
	if c.Database == "" {
		return filepath.Join(c.DataDir, dbFile)
	}
	return postgres.Redact(c.Database)
}

// shared reports whether other portal processes may share the store (PostgreSQL).
func (s *Server) shared() bool { return s.cfg.Database != "" }

// checkDataDir refuses a data directory whose database is missing or empty while its blob
// store holds files (a lost or truncated portal.db would otherwise start an empty portal
// beside orphaned bundles), unless init; and a database file that is not SQLite. It reports
// whether the database file exists with content.
func checkDataDir(dir string, init bool) (exists bool, err error) {
	db := filepath.Join(dir, dbFile)
	st, err := os.Stat(db)
	var state string
	switch {
	case errors.Is(err, fs.ErrNotExist):
		state = "missing"
	case err != nil:
		return false, fmt.Errorf("database %s: %w", db, err)
	case !st.Mode().IsRegular():
		return false, fmt.Errorf("database %s is not a regular file (%v)", db, st.Mode())
	case st.Size() == 0:
		state = "empty (0 bytes)"
	}
	if state != "" {
		n, err := countFiles(filepath.Join(dir, blobsDir))
		if err != nil {
			return false, err
		}
		if n > 0 && !init {
			return false, fmt.Errorf("database %s is %s, but %s holds %d stored files (bundles and firmware of an earlier database): "+
				"restore portal.db, or start with --init to begin a fresh database beside them", db, state, filepath.Join(dir, blobsDir), n)
		}
		return false, nil
	}
	f, err := os.Open(db)
	if err != nil {
		return false, fmt.Errorf("database %s: %w", db, err)
	}
	defer f.Close()
	head := make([]byte, len(sqliteHeader))
	if _, err := io.ReadFull(f, head); err != nil || !bytes.Equal(head, sqliteHeader) {
		return false, fmt.Errorf("database %s (%d bytes) is not an SQLite database (it does not begin with %q): restore it from a backup", db, st.Size(), sqliteHeader[:15])
	}
	return true, nil
}

// countFiles counts regular files under dir (0 when dir does not exist).
func countFiles(dir string) (int, error) {
	n := 0
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return filepath.SkipAll
			}
			return err
		}
		if d.Type().IsRegular() {
			n++
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("look into %s: %w", dir, err)
	}
	return n, nil
}

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
