// Command fwimpl writes a firmware build's implementation table (package
// firmware/impltable) as the C file that puts it into the ELF section .pqrepro_impl:
//
//	go run ./firmware/tools/fwimpl -spec firmware/implementations.txt -root firmware \
//		-version 0.1.0 [-algs ML-KEM-512] -o firmware/build/T/impl.c
//
// Each algorithm's source digest is computed here, from the files its line of the
// specification lists, so the table says what this build compiled.
package main

import (
	"flag"
	"log"
	"os"
	"path/filepath"
	"strings"

	"pqrepro/firmware/impltable"
)

func main() {
	spec := flag.String("spec", "", "the table's specification (firmware/implementations.txt)")
	root := flag.String("root", "", "the folder the specification's source paths are relative to (firmware/)")
	version := flag.String("version", "", "the firmware version, replacing @VERSION@")
	algs := flag.String("algs", "", "comma-separated algorithms the build links (default: every line)")
	out := flag.String("o", "", "the C file to write")
	user := flag.String("impl", "", "one specification line replacing its algorithm's: an implementation in its own folder (BYOI.md)")
	userRoot := flag.String("impl-root", "", "the folder -impl's source paths are relative to")
	flag.Parse()
	if *spec == "" || *root == "" || *out == "" {
		log.Fatal("fwimpl: -spec, -root and -o are required")
	}
	data, err := os.ReadFile(*spec)
	if err != nil {
		log.Fatalf("fwimpl: %v", err)
	}
	rows, err := impltable.ParseSpec(data, *version)
	if err != nil {
		log.Fatalf("fwimpl: %s: %v", *spec, err)
	}
	if *user != "" {
		if rows, err = impltable.Override(rows, *user, *userRoot, *version); err != nil {
			log.Fatalf("fwimpl: %v", err)
		}
	}
	var want []string
	if *algs != "" {
		want = strings.Split(*algs, ",")
	}
	entries, err := impltable.Build(rows, want, *root)
	if err != nil {
		log.Fatalf("fwimpl: %s: %v", *spec, err)
	}
	if err := os.MkdirAll(filepath.Dir(*out), 0o755); err != nil {
		log.Fatalf("fwimpl: %v", err)
	}
	if err := os.WriteFile(*out, impltable.CSource(entries, filepath.ToSlash(*spec)), 0o644); err != nil {
		log.Fatalf("fwimpl: %v", err)
	}
}
