package host

import (
	"pqrepro/artifacts"
	"pqrepro/artifacts/protocol"
	"pqrepro/runner"
)

// AgentBoards is the board list of a runner with only the host board of that class.
func AgentBoards(class string) []runner.AgentBoard {
	h := &Host{Class: class}
	info := protocol.BoardInfo{Name: artifacts.HostBoard, Class: h.class(), Driver: artifacts.DriverHost, Available: true}
	if chk, err := h.CheckClass(); err != nil {
		info.Available, info.Reason = false, err.Error()
	} else {
		info.ClassStatus = chk.Status
	}
	return []runner.AgentBoard{{Info: info, Board: h}}
}
