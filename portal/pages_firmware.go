package portal

// Firmware builds: list, upload, download.

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/a-h/templ"
	"github.com/labstack/echo/v4"

	"pqrepro/artifacts"
	"pqrepro/internal/boardcat"
	"pqrepro/portal/blob"
	"pqrepro/portal/fault"
	"pqrepro/portal/store"
	"pqrepro/templates"
)

func (s *Server) firmwarePage(c echo.Context) error {
	v, err := s.firmwareView(c)
	if err != nil {
		return err
	}
	return s.render(c, http.StatusOK, templates.FirmwarePage(v))
}

// firmwareView is the firmware page: the stored builds and the upload form.
func (s *Server) firmwareView(c echo.Context) (templates.FirmwareView, error) {
	ctx := c.Request().Context()
	fw, err := s.store.FirmwareBuilds(ctx, c.QueryParam("board"))
	if err != nil {
		return templates.FirmwareView{}, err
	}
	u, signed := currentUser(c)
	v := templates.FirmwareView{Page: s.page(c, "Firmware"), SignedIn: signed, MaxBytes: bytesHuman(s.cfg.MaxFirmwareBytes)}
	if signed && !mayUploadFirmware(u) {
		v.Role = string(u.Role)
	}
	for _, f := range fw {
		v.Builds = append(v.Builds, templates.FirmwareRow{Digest: f.Digest, Filename: f.Filename, Size: bytesHuman(f.Size), BoardClass: f.BoardClass,
			Toolchain: f.Toolchain, Libraries: f.Libraries, SourceURL: f.SourceURL, SourceCommit: f.SourceCommit, UploadedBy: f.UploadedBy, When: when(f.CreatedAt),
			Withdrawn: withdrawnText(f), CanWithdraw: signed && f.WithdrawnAt.IsZero() && (u.Role == store.RoleAdmin || (f.UploaderID != 0 && u.ID == f.UploaderID))})
	}
	for _, b := range s.catalog.Boards {
		v.Classes = append(v.Classes, b.Slug)
	}
	for _, c := range boardcat.EmulatedClasses() {
		if !slices.Contains(v.Classes, c) {
			v.Classes = append(v.Classes, c)
		}
	}
	return v, nil
}

var commitRE = regexp.MustCompile(`^[0-9a-f]{7,64}$`)

// uploadFirmware stores a build by digest (temporary file, sync, rename) and records it. A
// refused upload shows the page again with the typed fields kept (a browser never refills a
// file input) and the error beside its field.
func (s *Server) uploadFirmware(c echo.Context) error {
	form := templates.FirmwareForm{BoardClass: strings.TrimSpace(c.FormValue("board_class")), Toolchain: strings.TrimSpace(c.FormValue("toolchain")),
		Libraries: strings.TrimSpace(c.FormValue("libraries")), SourceURL: strings.TrimSpace(c.FormValue("source_url")),
		SourceCommit: strings.TrimSpace(c.FormValue("source_commit"))}
	msg, err := s.storeFirmware(c, form)
	if err != nil {
		return s.refuseForm(c, err, func(fe templates.FormError) (templ.Component, error) {
			v, err := s.firmwareView(c)
			form.Error = fe
			v.Upload = form
			return templates.FirmwarePage(v), err
		})
	}
	return s.redirectWithFlash(c, "/firmware", flash{Kind: "ok", Msg: msg})
}

// storeFirmware checks and stores the uploaded build, returning the message for the page; an
// error about one of the form's inputs says which (onField).
func (s *Server) storeFirmware(c echo.Context, form templates.FirmwareForm) (string, error) {
	ctx := c.Request().Context()
	u, _ := currentUser(c)
	f := store.Firmware{BoardClass: form.BoardClass, Toolchain: form.Toolchain, Libraries: form.Libraries, SourceURL: form.SourceURL, SourceCommit: form.SourceCommit}
	switch {
	case !artifacts.ValidBoardClass(f.BoardClass):
		return "", onField("board_class", fault.New(fault.Invalid, "target board class must be a lowercase slug like qemu-mps2-an386"))
	case len(f.Toolchain) > 200:
		return "", onField("toolchain", fault.New(fault.Invalid, "the toolchain is %d characters; at most 200", len(f.Toolchain)))
	case len(f.Libraries) > 500:
		return "", onField("libraries", fault.New(fault.Invalid, "the library versions are %d characters; at most 500", len(f.Libraries)))
	case !strings.HasPrefix(f.SourceURL, "https://") && !strings.HasPrefix(f.SourceURL, "http://") || len(f.SourceURL) > 500:
		return "", onField("source_url", fault.New(fault.Invalid, "the source URL must be an http(s) URL of at most 500 characters"))
	case !commitRE.MatchString(f.SourceCommit):
		return "", onField("source_commit", fault.New(fault.Invalid, "the source commit must be 7 to 64 lower-case hexadecimal digits (the hash git rev-parse HEAD prints, full or abbreviated), got %q", f.SourceCommit[:min(len(f.SourceCommit), 80)]))
	}
	fh, err := c.FormFile("file")
	if err != nil {
		return "", onField("file", fault.Wrap(fault.Invalid, err, "choose a firmware file"))
	}
	if fh.Size > s.cfg.MaxFirmwareBytes {
		return "", onField("file", fault.New(fault.TooLarge, "firmware is larger than the limit of %s", bytesHuman(s.cfg.MaxFirmwareBytes)))
	}
	file, err := fh.Open()
	if err != nil {
		return "", fmt.Errorf("open uploaded firmware: %w", err)
	}
	defer file.Close()
	note, err := checkFirmwareELF(file, fh.Size, f.BoardClass, s.boardArch(f.BoardClass))
	if err != nil {
		return "", onField("file", fault.Wrap(fault.Invalid, err, "firmware refused: %s", err.Error()))
	}
	if f.Build, err = readELFBuild(io.NewSectionReader(file, 0, fh.Size)); err != nil {
		return "", onField("file", fault.Wrap(fault.Invalid, err, "firmware refused: %s", err.Error()))
	}
	if mh, err := c.FormFile("metadata"); err == nil {
		mf, err := mh.Open()
		if err != nil {
			return "", fmt.Errorf("open uploaded metadata.json: %w", err)
		}
		raw, err := readLimited(mf, 256<<10)
		mf.Close()
		if err != nil {
			return "", onField("metadata", err)
		}
		meta, err := checkFirmwareMeta(raw, f.BoardClass, io.NewSectionReader(file, 0, fh.Size))
		if err == nil && !utf8.Valid(raw) {
			err = errors.New("metadata.json is not valid UTF-8")
		}
		if err == nil {
			err = addBuildMeta(&f.Build, raw)
		}
		if err != nil {
			return "", onField("metadata", fault.Wrap(fault.Invalid, err, "firmware refused: %s", err.Error()))
		}
		f.Toolchain = cmp.Or(f.Toolchain, meta.Toolchain)
		f.Metadata = string(raw)
	}
	// With neither a typed toolchain nor metadata.json, the compiler the ELF names itself.
	f.Toolchain = cmp.Or(f.Toolchain, f.Build.Compiler)
	// The declared libraries must be what the ELF's implementation table says it links: an
	// upload cannot publish another project's implementation under the project's name.
	libs, libNote, err := checkLibraries(f.Libraries, io.NewSectionReader(file, 0, fh.Size))
	if err != nil {
		return "", onField("libraries", fault.Wrap(fault.Invalid, err, "firmware refused: %s", err.Error()))
	}
	f.Libraries = libs
	if libNote != "" {
		note = strings.TrimPrefix(strings.TrimSpace(note+"; "+libNote), "; ")
	}
	if f.Toolchain == "" {
		return "", onField("toolchain", fault.New(fault.Invalid, "the ELF names no compiler (it has neither debug information nor a .comment section): give the toolchain that built it, or upload the build's metadata.json, which names it"))
	}
	if _, err := file.Seek(0, io.SeekStart); err != nil {
		return "", fmt.Errorf("rewind uploaded firmware: %w", err)
	}
	f.Digest, f.Size, err = s.blobs.Put(ctx, file, s.cfg.MaxFirmwareBytes)
	if err != nil {
		return "", err
	}
	f.Filename = sanitizeName(fh.Filename)
	if err := s.store.AddFirmware(ctx, f, u.ID); err != nil {
		return "", err
	}
	s.log.Info("firmware stored", "digest", f.Digest, "board", f.BoardClass, "by", u.Name)
	msg := "Firmware stored: " + artifacts.ShortDigest(f.Digest) + " for " + f.BoardClass + "."
	if note != "" {
		msg += " " + note + "."
	}
	return msg, nil
}

// boardArch is the catalogue's architecture of a board class ("" when it gives none).
func (s *Server) boardArch(class string) string {
	for _, b := range s.catalog.Boards {
		if b.Slug == class {
			return b.Arch
		}
	}
	return ""
}

// withdrawnText says when and why a build was withdrawn ("" while it is not).
func withdrawnText(f store.Firmware) string {
	if f.WithdrawnAt.IsZero() {
		return ""
	}
	return "withdrawn " + when(f.WithdrawnAt) + ": " + f.Withdrawn
}

func sanitizeName(n string) string {
	n = n[strings.LastIndexAny(n, `/\`)+1:]
	n = strings.Map(func(r rune) rune {
		if artifacts.Hidden(r) { // controls, bidi overrides, zero-width characters
			return -1
		}
		return r
	}, strings.ToValidUTF8(n, ""))
	if len(n) > 200 {
		n = n[:200]
	}
	if n == "" {
		n = "firmware.bin"
	}
	return n
}

// withdrawFirmware withdraws a build, with the reason given: by the administrator or the
// account that uploaded it. New jobs naming it are refused with that reason, the queued jobs
// that would flash it are cancelled with it (running ones finish: docs/DECISIONS.md); the
// file stays downloadable for the runs that used it.
func (s *Server) withdrawFirmware(c echo.Context) error {
	ctx := c.Request().Context()
	d := c.Param("digest")
	if !blob.ValidDigest(d) {
		return fault.New(fault.NotFound, "no firmware %q", d)
	}
	f, err := s.store.FirmwareBuild(ctx, d)
	if err != nil {
		return err
	}
	if u, _ := currentUser(c); u.Role != store.RoleAdmin && (f.UploaderID == 0 || u.ID != f.UploaderID) {
		return fault.New(fault.Forbidden, "only the administrator or the account that uploaded firmware %s can withdraw it", artifacts.ShortDigest(d))
	}
	reason := strings.Join(strings.Fields(c.FormValue("reason")), " ")
	var cancelled []int64
	switch {
	case reason == "":
		err = fault.New(fault.Invalid, "say why the build is withdrawn: the reason is shown to whoever asks for it")
	case len(reason) > 500:
		err = fault.New(fault.Invalid, "the reason is %d characters; at most 500", len(reason))
	default:
		cancelled, err = s.store.WithdrawFirmware(ctx, d, reason)
	}
	if err != nil {
		return s.refuseForm(c, onField("reason", err), func(fe templates.FormError) (templ.Component, error) {
			v, err := s.firmwareView(c)
			v.Withdraw = templates.WithdrawForm{Digest: d, Reason: c.FormValue("reason"), Error: fe}
			return templates.FirmwarePage(v), err
		})
	}
	msg := "Firmware " + artifacts.ShortDigest(d) + " withdrawn."
	if len(cancelled) > 0 {
		ids := make([]string, len(cancelled))
		for i, id := range cancelled {
			ids[i] = "#" + strconv.FormatInt(id, 10)
		}
		msg += fmt.Sprintf(" %d queued job(s) that would have flashed it were cancelled: %s.", len(cancelled), strings.Join(ids, ", "))
		s.log.Info("jobs cancelled by a firmware withdrawal", "digest", d, "jobs", cancelled)
	}
	return s.redirectWithFlash(c, "/firmware", flash{Kind: "ok", Msg: msg})
}

func (s *Server) firmwareDownload(c echo.Context) error {
	d := c.Param("digest")
	if !blob.ValidDigest(d) {
		return fault.New(fault.NotFound, "no firmware %q", d)
	}
	f, err := s.store.FirmwareBuild(c.Request().Context(), d)
	if err != nil {
		return err
	}
	rc, err := s.blobs.Open(c.Request().Context(), d)
	if err != nil {
		return err
	}
	defer rc.Close()
	c.Response().Header().Set("Content-Disposition", fmt.Sprintf(`attachment; filename=%q`, f.Filename))
	return c.Stream(http.StatusOK, "application/octet-stream", rc)
}

// firmwareBuildPage shows one build: its upload record and how it was built (firmwareBuildView).
func (s *Server) firmwareBuildPage(c echo.Context) error {
	d := c.Param("digest")
	if !blob.ValidDigest(d) {
		return fault.New(fault.NotFound, "no firmware %q", d)
	}
	f, err := s.store.FirmwareBuild(c.Request().Context(), d)
	if err != nil {
		return err
	}
	v := firmwareBuildView(f)
	v.Page = s.page(c, "Firmware "+artifacts.ShortDigest(d))
	return s.render(c, http.StatusOK, templates.FirmwareBuildPage(v))
}

// firmwareMetadata serves the metadata.json uploaded with a build, as it came.
func (s *Server) firmwareMetadata(c echo.Context) error {
	d := c.Param("digest")
	if !blob.ValidDigest(d) {
		return fault.New(fault.NotFound, "no firmware %q", d)
	}
	f, err := s.store.FirmwareBuild(c.Request().Context(), d)
	if err != nil {
		return err
	}
	if f.Metadata == "" {
		return fault.New(fault.NotFound, "firmware %s was uploaded without a metadata.json", artifacts.ShortDigest(d))
	}
	return c.Blob(http.StatusOK, "application/json", []byte(f.Metadata))
}

// exactBytes is an exact byte count with its digits grouped.
func exactBytes(n uint64) string { return groupDigits(int64(n)) + " B" }

// firmwareBuildView is a build's page from its record: the ELF's facts first, metadata.json's
// beside them, and the size report of metadata.json compared with the section headers'.
func firmwareBuildView(f store.Firmware) templates.FirmwareBuildView {
	b := f.Build
	src := f.SourceURL
	if f.SourceCommit != "" {
		src += " at commit " + f.SourceCommit
	}
	v := templates.FirmwareBuildView{Digest: f.Digest, Filename: f.Filename, Size: bytesHuman(f.Size), BoardClass: f.BoardClass, Toolchain: f.Toolchain,
		Libraries: f.Libraries, Source: src, UploadedBy: f.UploadedBy, When: when(f.CreatedAt), Withdrawn: withdrawnText(f),
		Recorded: len(b.Sections) > 0 || b.Compiler != "", Compiler: b.Compiler, CompilerFrom: b.CompilerFrom, Flags: projectRelative(b.Flags), FlagsFrom: b.FlagsFrom,
		Producers: b.Producers, MetaCompiler: b.MetaCompiler, MetaCFlags: projectRelative(b.MetaCFlags), LDFlags: projectRelative(b.LDFlags),
		Text: exactBytes(b.Text), Data: exactBytes(b.Data), BSS: exactBytes(b.BSS), CodeSizeMethod: b.CodeSizeMethod, BuildID: b.BuildID, HasMetadata: f.Metadata != ""}
	for _, s := range b.Sections {
		v.Sections = append(v.Sections, templates.FirmwareSectionRow{Name: s.Name, Kind: s.Kind, Size: exactBytes(s.Size)})
	}
	if m := b.MetaSize; m != nil {
		if m.Text == b.Text && m.Data == b.Data && m.BSS == b.BSS {
			v.SizeCheck = "metadata.json's size report agrees with the section headers."
		} else {
			v.SizeCheck = fmt.Sprintf("metadata.json's size report differs (text %s, data %s, bss %s): the section headers' sizes above are the ELF's own and are the ones shown.",
				exactBytes(m.Text), exactBytes(m.Data), exactBytes(m.BSS))
		}
	}
	for _, g := range b.CodeSize {
		row := templates.FirmwareCodeRow{Group: g.Group, Code: exactBytes(g.Code), ROData: exactBytes(g.ROData), Total: exactBytes(g.Total), WithShared: "–"}
		if g.WithShared > 0 {
			row.WithShared = exactBytes(g.WithShared)
		}
		v.CodeSize = append(v.CodeSize, row)
	}
	return v
}
