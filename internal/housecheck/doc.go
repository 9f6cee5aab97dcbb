// Package housecheck holds no code: its tests check the rules the whole tree keeps, so a change
// that breaks one fails CI rather than waiting for a reviewer. No hand-written function over
// 100 lines outside bench/ and firmware/tools/; no environment read outside cmd/ and the
// test-support packages; no MQTT broker or TLS engine linked into the serial-port driver.
package housecheck
