package mcap

// crc32Combine returns the CRC-32 (IEEE) of A followed by B from crcA,
// crcB and B's length, without reading B again. The writer uses it for the
// data section's running CRC over an uncompressed chunk, whose CRC it
// computed for the chunk record already.
//
// CRC(A·B) = CRC(A)·x^(8·lenB) mod P, plus CRC(B): the register advanced
// over lenB zero bytes is a multiplication by x^(8·lenB) modulo the CRC
// polynomial P. That power is a product of the precomputed x^(2^k) mod P
// for the bits k of 8·lenB (x's multiplicative order divides 2^32-1, so
// x^(2^32) = x and the table repeats every 32), each product a 32-step
// shift-and-add; about log2(lenB) products in all (a few hundred
// nanoseconds for a chunk, where squaring 32x32 bit matrices as zlib's
// original crc32_combine does took tens of microseconds).
func crc32Combine(crcA, crcB uint32, lenB int64) uint32 {
	if lenB <= 0 {
		return crcA
	}
	return mulModP(xPow8n(uint64(lenB)), crcA) ^ crcB
}

// crcPoly is the IEEE polynomial, bit-reflected: the CRC register's most
// significant bit holds x^0.
const crcPoly = 0xedb88320

// mulModP returns a·b mod P for polynomials in the register's reflected
// bit order.
func mulModP(a, b uint32) uint32 {
	var p uint32
	for m := uint32(1) << 31; m != 0 && a != 0; m >>= 1 {
		if a&m != 0 {
			p ^= b
			a ^= m
		}
		if b&1 != 0 { // b·x
			b = b>>1 ^ crcPoly
		} else {
			b >>= 1
		}
	}
	return p
}

// x2k[k] is x^(2^k) mod P, reflected.
var x2k = func() (t [32]uint32) {
	t[0] = 1 << 30 // x^1
	for k := 1; k < 32; k++ {
		t[k] = mulModP(t[k-1], t[k-1])
	}
	return t
}()

// xPow8n returns x^(8n) mod P, reflected.
func xPow8n(n uint64) uint32 {
	p := uint32(1) << 31 // x^0
	for k := 3; n != 0; n, k = n>>1, k+1 {
		if n&1 != 0 {
			p = mulModP(x2k[k&31], p)
		}
	}
	return p
}
