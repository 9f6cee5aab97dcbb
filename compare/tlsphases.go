package compare

// keyExchangeNS returns the key-exchange time per handshake of the cell ref (client key
// share + client decapsulation + server encapsulation, the engine's phase medians, in ns),
// or why it is not recorded.
func keyExchangeNS(run Run, ref string) (float64, string) {
	return 0, "key-exchange phase times not recorded"
}
