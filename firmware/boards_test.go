package firmware

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// boardMK reads the simple assignments of a board.mk ("NAME := value", "NAME += value",
// with backslash continuations) and of the family fragments it includes; rules and their
// recipes are skipped.
func boardMK(path string) (map[string]string, error) {
	vars := map[string]string{}
	return vars, readMK(path, vars, 0)
}

var (
	mkAssign  = regexp.MustCompile(`^([A-Za-z0-9_]+)\s*(:=|\+=)\s*(.*)$`)
	mkInclude = regexp.MustCompile(`^include\s+(\S+)$`)
)

func readMK(path string, vars map[string]string, depth int) error {
	if depth > 2 {
		return fmt.Errorf("%s: includes nested too deep", path)
	}
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	var cont string
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := cont + sc.Text()
		cont = ""
		if strings.HasSuffix(line, `\`) {
			cont = strings.TrimSuffix(line, `\`) + " "
			continue
		}
		if line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, "\t") {
			continue
		}
		if m := mkInclude.FindStringSubmatch(line); m != nil {
			if err := readMK(m[1], vars, depth+1); err != nil {
				return fmt.Errorf("%s:%d: %w", path, n, err)
			}
			continue
		}
		if m := mkAssign.FindStringSubmatch(line); m != nil {
			v := strings.TrimSpace(m[3])
			if _, set := vars[m[1]]; set && m[2] == ":=" {
				return fmt.Errorf("%s:%d: %s set twice", path, n, m[1])
			}
			if m[2] == "+=" && vars[m[1]] != "" {
				v = vars[m[1]] + " " + v
			}
			vars[m[1]] = v
		}
	}
	return sc.Err()
}

// boardInfoName finds the board= a port.c's fw_board_info reports (designated initialiser).
var boardInfoName = regexp.MustCompile(`(?s)const struct fw_board fw_board_info = \{\s*\.board = "([^"]+)",`)

// TestBoardLayout checks the board contract of the Makefile ("Boards"): every directory
// under boards/ with a port.c but the host's is a board with a board.mk that sets the
// required variables, names sources that exist (its own port.c first) and has a link
// script; its fw_board_info names the directory (what HELLO reports as board=); an
// emulated board (qemu-*) says how it boots, a real one does not; and no C file of the
// firmware includes another .c file (a family is compiled as a unit with its board's macros).
func TestBoardLayout(t *testing.T) {
	ports, err := filepath.Glob("boards/*/port.c")
	if err != nil {
		t.Fatal(err)
	}
	boards := 0
	for _, port := range ports {
		dir := filepath.Dir(port)
		name := filepath.Base(dir)
		src, err := os.ReadFile(port)
		if err != nil {
			t.Fatal(err)
		}
		if m := boardInfoName.FindSubmatch(src); m == nil || string(m[1]) != name {
			t.Errorf("%s: fw_board_info must be a designated initialiser starting .board = %q", port, name)
		}
		if name == "host" {
			continue
		}
		boards++
		vars, err := boardMK(filepath.Join(dir, "board.mk"))
		if err != nil {
			t.Errorf("board %s: %v", name, err)
			continue
		}
		for _, v := range []string{"BOARD_CC", "BOARD_SIZE", "BOARD_CFLAGS", "BOARD_SRC"} {
			if vars[v] == "" {
				t.Errorf("%s/board.mk: %s is not set", dir, v)
			}
		}
		srcs := strings.Fields(vars["BOARD_SRC"])
		if len(srcs) == 0 || srcs[0] != filepath.ToSlash(port) {
			t.Errorf("%s/board.mk: BOARD_SRC = %q, want %s first", dir, vars["BOARD_SRC"], port)
		}
		for _, s := range srcs {
			if _, err := os.Stat(s); err != nil {
				t.Errorf("%s/board.mk: BOARD_SRC: %v", dir, err)
			}
		}
		ld := vars["BOARD_LD"]
		if ld == "" {
			ld = filepath.Join(dir, "link.ld")
		}
		if _, err := os.Stat(ld); err != nil {
			t.Errorf("%s: link script: %v", dir, err)
		}
		if emulated := strings.HasPrefix(name, "qemu-"); emulated != (vars["BOARD_QEMU"] != "") {
			t.Errorf("%s/board.mk: BOARD_QEMU = %q for a board that is emulated: %v", dir, vars["BOARD_QEMU"], emulated)
		}
	}
	if boards < 6 {
		t.Errorf("%d boards under boards/, want at least the 6 the firmware has", boards)
	}

	includeC := regexp.MustCompile(`(?m)^\s*#\s*include\s+"[^"]+\.c"`)
	err = filepath.WalkDir(".", func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (path == "build" || path == "tools") {
			return filepath.SkipDir
		}
		if d.IsDir() || (filepath.Ext(path) != ".c" && filepath.Ext(path) != ".h") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if m := includeC.Find(src); m != nil {
			t.Errorf("%s includes a .c file: %s", path, strings.TrimSpace(string(m)))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
