package pack

import "hash/crc32"

// crcRanges answers "CRC32C of b[a:c]" for any range of one buffer in
// time independent of the range's length, after one linear pass that keeps
// the CRC register every crcStride bytes. Verify and Recover use it to
// test each candidate record while resynchronising past damage: a hostile
// file packed with overlapping fake records that claim long lengths would
// otherwise cost a hash of the rest of the file per candidate (quadratic).
//
// The CRC register without the initial and final inversion, reg(r, p), is
// affine in r: reg(r, p) = r·x^(8·len(p)) ⊕ reg(0, p) (mod the CRC
// polynomial). So with R(i) = reg(0, b[:i]),
//
//	CRC32C(b[a:c]) = ¬( (¬0 ⊕ R(a))·x^(8(c−a)) ⊕ R(c) ).
//
// Polynomials are in the reflected representation of hash/crc32: bit 31
// is x^0, bit 0 is x^31.
type crcRanges struct {
	b    []byte
	regs []uint32 // regs[k] = R(k*crcStride)
}

// crcStride is the spacing of the kept registers: memory len(b)/64 bytes,
// at most 2*crcStride bytes hashed per query.
const crcStride = 256

// castagnoliReflected is the CRC-32C polynomial, reflected, without x^32.
const castagnoliReflected = 0x82F63B78

func newCRCRanges(b []byte) *crcRanges {
	c := &crcRanges{b: b, regs: make([]uint32, len(b)/crcStride+1)}
	var r uint32
	for k := 1; k < len(c.regs); k++ {
		r = rawUpdate(r, b[(k-1)*crcStride:k*crcStride])
		c.regs[k] = r
	}
	return c
}

// rawUpdate is reg(r, p): the register after p, without inversions.
func rawUpdate(r uint32, p []byte) uint32 { return ^crc32.Update(^r, castagnoli, p) }

// reg returns R(i).
func (c *crcRanges) reg(i int64) uint32 {
	k := i / crcStride
	return rawUpdate(c.regs[k], c.b[k*crcStride:i])
}

// crc returns CRC32C(b[a:c]); 0 <= a <= c <= len(b).
func (c *crcRanges) crc(a, e int64) uint32 {
	if e-a <= 2*crcStride {
		return crc(c.b[a:e])
	}
	return ^(gfMul(^uint32(0)^c.reg(a), xPow8n(uint64(e-a))) ^ c.reg(e))
}

// gfMul multiplies two reflected polynomials modulo the CRC polynomial.
func gfMul(a, b uint32) uint32 {
	var p uint32
	for i := 0; i < 32; i++ { // b·x^i for every x^i in a
		if a&(1<<(31-i)) != 0 {
			p ^= b
		}
		b = b>>1 ^ castagnoliReflected*(b&1) // b·x
	}
	return p
}

// xPow2k[k] = x^(2^k).
var xPow2k = func() (t [64]uint32) {
	t[0] = 1 << 30 // x^1
	for k := 1; k < len(t); k++ {
		t[k] = gfMul(t[k-1], t[k-1])
	}
	return t
}()

// xPow8n returns x^(8n): shifting a register past n bytes.
func xPow8n(n uint64) uint32 {
	p := uint32(1 << 31) // x^0
	for k := 3; n != 0; k++ {
		if n&1 != 0 {
			p = gfMul(p, xPow2k[k])
		}
		n >>= 1
	}
	return p
}
