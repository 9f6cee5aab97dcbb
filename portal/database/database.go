// Package database opens the portal's store on the engine a configuration names: the SQLite
// file portal.db in the data directory (the default), or a PostgreSQL database shared by any
// number of portal processes, each with the checks it needs before a portal starts on it. The
// portal takes the opened *sqlstore.DB and never chooses an engine; the binaries (pqrepro
// serve and rebuild, the seeder) and the portal's test support choose through this package.
package database

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

	"pqrepro/portal"
	"pqrepro/portal/postgres"
	"pqrepro/portal/sqlite"
	"pqrepro/portal/sqlstore"
	"pqrepro/portal/store"
)

// Names in the data directory.
const (
	dbFile   = portal.DatabaseFile
	blobsDir = portal.BlobsDir
)

// sqliteHeader begins every SQLite 3 database file.
var sqliteHeader = []byte("SQLite format 3\x00")

// IsURL reports whether s names a PostgreSQL database (postgres:// or postgresql://).
func IsURL(s string) bool { return postgres.IsURL(s) }

// OpenPortal opens the database cfg names (Open) and the portal over it; the portal closes
// the database when it closes.
func OpenPortal(ctx context.Context, cfg portal.Config, log *slog.Logger) (*portal.Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("portal config: %w", err)
	}
	if err := os.MkdirAll(cfg.DataDir, 0o755); err != nil {
		return nil, fmt.Errorf("data directory: %w", err)
	}
	db, existed, err := Open(ctx, cfg, log)
	if err != nil {
		return nil, err
	}
	srv, err := portal.Open(ctx, cfg, portal.Database{DB: db, Existed: existed, Location: Location(cfg.DataDir, cfg.Database)}, log)
	if err != nil {
		db.Close()
		return nil, err
	}
	return srv, nil
}

// Open opens the configured database: the SQLite file in the data directory (checked before
// opening, see checkDataDir; portal.Open checks its integrity), or the PostgreSQL database
// of cfg.Database. It reports whether the database held a portal already (SQLite: the file
// had content; PostgreSQL: an administrator exists), for the check against orphaned blobs.
func Open(ctx context.Context, cfg portal.Config, log *slog.Logger) (*sqlstore.DB, bool, error) {
	if cfg.Database != "" && !IsURL(cfg.Database) {
		return nil, false, fmt.Errorf("database: want postgres://USER@HOST:PORT/NAME, or nothing for the SQLite file %s", filepath.Join(cfg.DataDir, dbFile))
	}
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
					"restore the database, or start with --init to begin a fresh database beside them", Location(cfg.DataDir, cfg.Database), filepath.Join(cfg.DataDir, blobsDir), n)
			}
		}
		log.Info("database", "engine", "PostgreSQL", "at", Location(cfg.DataDir, cfg.Database))
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
	if cfg.Logs != (store.LogLimits{}) {
		st.Logs = cfg.Logs
	}
	if cfg.Now != nil {
		st.Now = cfg.Now
	}
	return st, exists, nil
}

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

// Location says where the database is, for people: the SQLite file's path, or the
// PostgreSQL URL without its password.
func Location(dataDir, database string) string {
	if database == "" {
		return filepath.Join(dataDir, dbFile)
	}
	return postgres.Redact(database)
}
