package step

// The packed codec reads and writes the fields of a Go value at offsets
// the binding computed once (packed.go), through unsafe pointers: no
// reflection per message, no allocation for scalars. Every offset and kind
// comes from reflect on the value's own type, and every read of a message
// is bounds-checked.

import (
	"encoding/binary"
	"fmt"
	"math"
	"reflect"
	"unsafe"

	"github.com/edr-lite/edr-lite/schema"
)

func (c *packedCodec[T]) Append(dst []byte, v T) ([]byte, error) {
	n := len(dst)
	out, err := encodeOps(dst, c.ops, unsafe.Pointer(&v))
	if err != nil {
		return dst[:n], err
	}
	return out, nil
}

func (c *packedCodec[T]) Decode(data []byte, v *T) error {
	if len(data) < c.min {
		return fmt.Errorf("%w: %s: message of %d bytes, the layout needs %d", ErrCodec, c.typ.Schema.Name, len(data), c.min)
	}
	_, err := decodeOps(data, 0, c.ops, unsafe.Pointer(v))
	return err
}

const wordSize = unsafe.Sizeof(uintptr(0))

// sliceParts returns the data pointer and length of the slice at p.
func sliceParts(p unsafe.Pointer) (unsafe.Pointer, int) {
	return *(*unsafe.Pointer)(p), *(*int)(unsafe.Add(p, wordSize))
}

// bytesAt returns the bytes of the string or []byte at p (not copied).
func bytesAt(p unsafe.Pointer, isString bool) []byte {
	if isString {
		s := *(*string)(p)
		return unsafe.Slice(unsafe.StringData(s), len(s))
	}
	return *(*[]byte)(p)
}

func loadInt(p unsafe.Pointer, k reflect.Kind) int64 {
	switch k {
	case reflect.Int8:
		return int64(*(*int8)(p))
	case reflect.Int16:
		return int64(*(*int16)(p))
	case reflect.Int32:
		return int64(*(*int32)(p))
	case reflect.Int64:
		return *(*int64)(p)
	}
	return int64(*(*int)(p))
}

func loadUint(p unsafe.Pointer, k reflect.Kind) uint64 {
	switch k {
	case reflect.Uint8:
		return uint64(*(*uint8)(p))
	case reflect.Uint16:
		return uint64(*(*uint16)(p))
	case reflect.Uint32:
		return uint64(*(*uint32)(p))
	case reflect.Uint64:
		return *(*uint64)(p)
	}
	return uint64(*(*uint)(p))
}

func storeInt(p unsafe.Pointer, k reflect.Kind, v int64) {
	switch k {
	case reflect.Int8:
		*(*int8)(p) = int8(v)
	case reflect.Int16:
		*(*int16)(p) = int16(v)
	case reflect.Int32:
		*(*int32)(p) = int32(v)
	case reflect.Int64:
		*(*int64)(p) = v
	case reflect.Int:
		*(*int)(p) = int(v)
	case reflect.Uint8:
		*(*uint8)(p) = uint8(v)
	case reflect.Uint16:
		*(*uint16)(p) = uint16(v)
	case reflect.Uint32:
		*(*uint32)(p) = uint32(v)
	case reflect.Uint64:
		*(*uint64)(p) = uint64(v)
	case reflect.Uint:
		*(*uint)(p) = uint(v)
	}
}

func appendScalar(dst []byte, size int, big bool, bits uint64) []byte {
	var order binary.AppendByteOrder = binary.LittleEndian
	if big {
		order = binary.BigEndian
	}
	switch size {
	case 1:
		return append(dst, byte(bits))
	case 2:
		return order.AppendUint16(dst, uint16(bits))
	case 4:
		return order.AppendUint32(dst, uint32(bits))
	}
	return order.AppendUint64(dst, bits)
}

func readScalar(b []byte, size int, big bool) uint64 {
	var order binary.ByteOrder = binary.LittleEndian
	if big {
		order = binary.BigEndian
	}
	switch size {
	case 1:
		return uint64(b[0])
	case 2:
		return uint64(order.Uint16(b))
	case 4:
		return uint64(order.Uint32(b))
	}
	return order.Uint64(b)
}

// scalarBits returns the bits of the scalar at p as o's layout type, or an
// error when the value does not fit it.
func scalarBits(o *op, p unsafe.Pointer) (uint64, error) {
	switch o.scalar {
	case schema.KindFloat:
		if o.size == 4 {
			return uint64(math.Float32bits(*(*float32)(p))), nil
		}
		return math.Float64bits(*(*float64)(p)), nil
	case schema.KindBool:
		if *(*bool)(p) {
			return 1, nil
		}
		return 0, nil
	}
	bits := uint(8 * o.size)
	_, signed, _ := intBits(o.gk)
	if signed {
		v := loadInt(p, o.gk)
		if o.scalar == schema.KindInt {
			if bits < 64 && (v < -(1<<(bits-1)) || v >= 1<<(bits-1)) {
				return 0, fmt.Errorf("%w: %s: %d does not fit a %d-bit signed integer", ErrCodec, o.path, v, bits)
			}
		} else if v < 0 || (bits < 64 && v >= 1<<bits) {
			return 0, fmt.Errorf("%w: %s: %d does not fit a %d-bit unsigned integer", ErrCodec, o.path, v, bits)
		}
		return uint64(v), nil
	}
	u := loadUint(p, o.gk)
	if o.scalar == schema.KindInt {
		if u >= 1<<(bits-1) {
			return 0, fmt.Errorf("%w: %s: %d does not fit a %d-bit signed integer", ErrCodec, o.path, u, bits)
		}
	} else if bits < 64 && u >= 1<<bits {
		return 0, fmt.Errorf("%w: %s: %d does not fit a %d-bit unsigned integer", ErrCodec, o.path, u, bits)
	}
	return u, nil
}

func encodeOps(dst []byte, ops []op, base unsafe.Pointer) ([]byte, error) {
	for i := range ops {
		o := &ops[i]
		p := unsafe.Add(base, o.off)
		switch o.kind {
		case opScalar:
			bits, err := scalarBits(o, p)
			if err != nil {
				return dst, err
			}
			dst = appendScalar(dst, o.size, o.big, bits)
		case opPad:
			for range o.size {
				dst = append(dst, 0)
			}
		case opChar:
			var b []byte
			if o.gk == reflect.String {
				b = bytesAt(p, true)
			} else {
				b = unsafe.Slice((*byte)(p), o.size)
			}
			if len(b) > o.size {
				return dst, fmt.Errorf("%w: %s: %d bytes do not fit char[%d]", ErrCodec, o.path, len(b), o.size)
			}
			dst = append(dst, b...)
			for range o.size - len(b) {
				dst = append(dst, 0)
			}
		case opStr:
			b := bytesAt(p, o.gk == reflect.String)
			if limit := uint64(1)<<(8*o.size) - 1; uint64(len(b)) > limit {
				return dst, fmt.Errorf("%w: %s: %d bytes exceed the %d a %d-byte length prefix holds", ErrCodec, o.path, len(b), limit, o.size)
			}
			dst = appendScalar(dst, o.size, o.big, uint64(len(b)))
			dst = append(dst, b...)
		case opStruct:
			var err error
			if dst, err = encodeOps(dst, o.sub, p); err != nil {
				return dst, err
			}
		case opArray:
			elems := p
			if o.slice != nil {
				var n int
				elems, n = sliceParts(p)
				if n != o.n {
					return dst, fmt.Errorf("%w: %s: %d elements, the layout has %d", ErrCodec, o.path, n, o.n)
				}
			}
			for j := range o.n {
				var err error
				if dst, err = encodeOps(dst, o.sub, unsafe.Add(elems, uintptr(j)*o.esize)); err != nil {
					return dst, err
				}
			}
		}
	}
	return dst, nil
}

func short(o *op, off int) error {
	return fmt.Errorf("%w: %s: the message ends at byte %d", ErrCodec, o.path, off)
}

func decodeOps(msg []byte, off int, ops []op, base unsafe.Pointer) (int, error) {
	for i := range ops {
		o := &ops[i]
		p := unsafe.Add(base, o.off)
		switch o.kind {
		case opScalar:
			if o.size > len(msg)-off {
				return off, short(o, len(msg))
			}
			bits := readScalar(msg[off:], o.size, o.big)
			off += o.size
			switch o.scalar {
			case schema.KindFloat:
				if o.size == 4 {
					*(*float32)(p) = math.Float32frombits(uint32(bits))
				} else {
					*(*float64)(p) = math.Float64frombits(bits)
				}
			case schema.KindBool:
				*(*bool)(p) = bits != 0
			case schema.KindInt:
				s := 64 - 8*uint(o.size)
				storeInt(p, o.gk, int64(bits<<s)>>s)
			default:
				storeInt(p, o.gk, int64(bits))
			}
		case opPad:
			if o.size > len(msg)-off {
				return off, short(o, len(msg))
			}
			off += o.size
		case opChar:
			if o.size > len(msg)-off {
				return off, short(o, len(msg))
			}
			b := msg[off : off+o.size]
			off += o.size
			if o.gk == reflect.String {
				n := 0
				for n < len(b) && b[n] != 0 {
					n++
				}
				*(*string)(p) = string(b[:n])
			} else {
				copy(unsafe.Slice((*byte)(p), o.size), b)
			}
		case opStr:
			if o.size > len(msg)-off {
				return off, short(o, len(msg))
			}
			n := readScalar(msg[off:], o.size, o.big)
			off += o.size
			if n > uint64(len(msg)-off) {
				return off, short(o, len(msg))
			}
			b := msg[off : off+int(n)]
			off += int(n)
			if o.gk == reflect.String {
				*(*string)(p) = string(b)
			} else if len(b) == 0 {
				*(*[]byte)(p) = nil
			} else {
				*(*[]byte)(p) = append([]byte(nil), b...)
			}
		case opStruct:
			var err error
			if off, err = decodeOps(msg, off, o.sub, p); err != nil {
				return off, err
			}
		case opArray:
			elems := p
			if o.slice != nil {
				s := reflect.MakeSlice(o.slice, o.n, o.n)
				reflect.NewAt(o.slice, p).Elem().Set(s)
				elems, _ = sliceParts(p)
			}
			for j := range o.n {
				var err error
				if off, err = decodeOps(msg, off, o.sub, unsafe.Add(elems, uintptr(j)*o.esize)); err != nil {
					return off, err
				}
			}
		}
	}
	return off, nil
}
