package portal

import (
	"pqrepro/templates"
)

// CompileARM is compileARM for the external tests (package portal_test).
var CompileARM = compileARM

// PaperParts is paperParts of the server's paper id for the external tests.
func (s *Server) PaperParts(id string) (templates.PaperParts, error) {
	p, err := s.paperOf(id)
	if err != nil {
		return templates.PaperParts{}, err
	}
	return s.paperParts(p)
}
