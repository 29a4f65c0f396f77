package dumpfile

import "unsafe"

// sameString reports whether a and b are the same string in memory (the
// same bytes at the same address): true means equal, false means nothing.
// Names interned by the pack reader are compared by it first, which costs
// no byte comparison of equal-length topics that differ ("topic/0" and
// "topic/1").
func sameString(a, b string) bool {
	return len(a) == len(b) && unsafe.StringData(a) == unsafe.StringData(b)
}
