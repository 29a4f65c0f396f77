package mcap

// crc32Combine returns the CRC-32 (IEEE) of A followed by B from crcA,
// crcB and B's length, without reading B again (zlib's crc32_combine: the
// CRC register advanced by lenB zero bytes through squared GF(2) operator
// matrices). The writer uses it for the data section's running CRC over an
// uncompressed chunk, whose CRC it computed for the chunk record already.
func crc32Combine(crcA, crcB uint32, lenB int64) uint32 {
	if lenB <= 0 {
		return crcA
	}
	var even, odd [32]uint32
	odd[0] = 0xedb88320 // the reflected IEEE polynomial: the operator for one zero bit
	row := uint32(1)
	for n := 1; n < 32; n++ {
		odd[n] = row
		row <<= 1
	}
	gf2MatrixSquare(&even, &odd) // two zero bits
	gf2MatrixSquare(&odd, &even) // four zero bits
	for {
		gf2MatrixSquare(&even, &odd) // one zero byte, then 4, 16, ...
		if lenB&1 != 0 {
			crcA = gf2MatrixTimes(&even, crcA)
		}
		lenB >>= 1
		if lenB == 0 {
			break
		}
		gf2MatrixSquare(&odd, &even)
		if lenB&1 != 0 {
			crcA = gf2MatrixTimes(&odd, crcA)
		}
		lenB >>= 1
		if lenB == 0 {
			break
		}
	}
	return crcA ^ crcB
}

func gf2MatrixTimes(mat *[32]uint32, vec uint32) uint32 {
	var sum uint32
	for i := 0; vec != 0; i, vec = i+1, vec>>1 {
		if vec&1 != 0 {
			sum ^= mat[i]
		}
	}
	return sum
}

func gf2MatrixSquare(square, mat *[32]uint32) {
	for n := range 32 {
		square[n] = gf2MatrixTimes(mat, mat[n])
	}
}
