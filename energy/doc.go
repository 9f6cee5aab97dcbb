// Package energy turns power captures into energy per operation. Its one computation,
// PerOperation, is paper002's equation 1, E_op = (P_load - P_idle) x T_op, with a 95 %
// interval from a circular block bootstrap of the two capture means; the paper's own traces and
// a lab's meter captures go through it alike. Readers of meter formats live in sub-packages
// (energy/fnb58). It imports only the standard library.
package energy
